// Package browser tests the status page in a real browser: headless
// Chromium, driven through the DevTools protocol by chromedp, against three
// `baton crontab --http` processes on an embedded etcd. It is a module of
// its own so that the SDK's go.mod carries no browser driver and
// `go test ./...` at the root needs only Go; .ci/run installs Debian's
// chromium and runs it. Without Chromium the test fails: it never skips.
//
// BATON_CHROMIUM names the browser binary (default: chromium, then
// chromium-browser, on PATH); BATON_SCREENSHOT=FILE writes a PNG of the
// page at the end, as in the README.
package browser
