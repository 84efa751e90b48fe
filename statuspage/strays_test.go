package statuspage

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// strayKeys puts a scheduler's job, as its replicas write it, and keys
// under P/jobs/ that no scheduler could have written, as etcdctl may.
func strayKeys(t *testing.T) (*etcdtest.Space, context.Context) {
	t.Helper()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	for k, v := range map[string]string{
		"/baton/jobs/s/report/spec":             "@hourly",
		"/baton/jobs/s/report/by/1":             "web-1", // a live replica has it
		"/baton/jobs/my scheduler/x/spec":       "@hourly",
		"/baton/jobs/<b>/x/spec":                "@hourly",
		"/baton/jobs/<b>/x/last":                "1 a",
		"/baton/jobs/stray":                     "",
		"/baton/jobs/s/my job/spec":             "@daily",
		"/baton/jobs/s/loose":                   "",
		"/baton/jobs/s/.trigger/report-is-gone": "", // the scheduler's own
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	return m, ctx
}

// TestStrayKeysAreSkippedAndNamed: keys under P/jobs/ of a scheduler or a
// job name that is not valid, or in no scheduler's or job's directory, are
// skipped by Read, which used to fail for the whole prefix on them, and
// named in the snapshot, its JSON, its text and the page, which used to
// answer 503; the scheduler's own keys are not named.
func TestStrayKeysAreSkippedAndNamed(t *testing.T) {
	t.Parallel()
	m, ctx := strayKeys(t)
	cli := m.Client(t)
	snap, err := Read(ctx, cli, "/baton", "", time.Now())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(snap.Schedulers) != 1 || snap.Schedulers[0].Name != "s" ||
		len(snap.Schedulers[0].Jobs) != 1 || snap.Schedulers[0].Jobs[0].Name != "report" {
		t.Errorf("schedulers %+v, want s with its job report only", snap.Schedulers)
	}
	want := []IgnoredKey{
		{Key: "/baton/jobs/<b>/", Keys: 2, Why: `scheduler name "<b>": use letters, digits, '.', '_' and '-', starting with a letter or digit`},
		{Key: "/baton/jobs/my scheduler/x/spec", Keys: 1, Why: `scheduler name "my scheduler": use letters, digits, '.', '_' and '-', starting with a letter or digit`},
		{Key: "/baton/jobs/s/loose", Keys: 1, Why: "in no job's directory"},
		{Key: "/baton/jobs/s/my job/spec", Keys: 1, Why: `job name "my job": use letters, digits, '.', '_' and '-', starting with a letter or digit`},
		{Key: "/baton/jobs/stray", Keys: 1, Why: "in no scheduler's directory"},
	}
	if !slices.Equal(snap.Ignored, want) {
		t.Errorf("ignored\n%+v\nwant\n%+v", snap.Ignored, want)
	}

	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Ignored []IgnoredKey `json:"ignored_keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || !slices.Equal(doc.Ignored, want) {
		t.Errorf("JSON ignored_keys %+v (%v), want %+v:\n%s", doc.Ignored, err, want, b)
	}

	var text strings.Builder
	if err := snap.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`ignored 2 keys under "/baton/jobs/<b>/": scheduler name "<b>": use letters`,
		`ignored key "/baton/jobs/my scheduler/x/spec": scheduler name "my scheduler": use letters`,
		`ignored key "/baton/jobs/s/my job/spec": job name "my job": use letters`,
		`ignored key "/baton/jobs/s/loose": in no job's directory`,
		`ignored key "/baton/jobs/stray": in no scheduler's directory`,
	} {
		if !strings.Contains(text.String(), "\n"+line) {
			t.Errorf("text lacks a line %q:\n%s", line, text.String())
		}
	}

	page, err := New(cli, "/baton")
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := get(t, page, http.MethodGet)
	if code != http.StatusOK {
		t.Fatalf("GET: %d:\n%s", code, body)
	}
	for _, want := range []string{
		`<div class="warn" id="ignored-keys">`,
		`<li class="ignored">2 keys under <code>/baton/jobs/&lt;b&gt;/</code>: scheduler name &#34;&lt;b&gt;&#34;: use letters`,
		`<li class="ignored">key <code>/baton/jobs/my scheduler/x/spec</code>: scheduler name &#34;my scheduler&#34;`,
		`<tr class="job" data-job="report">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}

	// Asked for one scheduler, the snapshot names that one's strays only.
	one, err := Read(ctx, cli, "/baton", "s", time.Now())
	if err != nil {
		t.Fatalf("Read of s: %v", err)
	}
	if !slices.Equal(one.Ignored, want[2:4]) {
		t.Errorf("Read of s: ignored %+v, want %+v", one.Ignored, want[2:4])
	}
}

// TestTextEscapesControlBytesFromEtcd: a run's error, a job's spec, who
// paused it, who ran it and the names of elections and locks come from
// etcd; the text output prints their control bytes and invisible
// characters escaped, so none reaches the terminal, and ordinary Unicode as
// it is.
func TestTextEscapesControlBytesFromEtcd(t *testing.T) {
	t.Parallel()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for k, v := range map[string]string{
		"/baton/jobs/s/report/spec":    "@hourly\x1b[8m",
		"/baton/jobs/s/report/by/1":    "web-1", // a live replica has it
		"/baton/jobs/s/report/paused":  "ops\x1b]0;owned\x07",
		"/baton/jobs/s/report/history": `[{"tick":"2026-01-01T00:00:00Z","instance":"web-1\u001b[2J","start":"2026-01-01T00:00:01Z","duration":1000000,"error":"exit 1: \u001b[31mRed\u001b[0m \u202eéà 日本"}]`,
		"/baton/lock/l\x1bx/1":         "",
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := Read(ctx, cli, "/baton", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := snap.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for i, r := range out {
		if r < 0x20 && r != '\n' || r == 0x7f || r == 0x202e {
			t.Fatalf("text has %q at %d:\n%q", r, i, out)
		}
	}
	for _, want := range []string{
		`@hourly\x1b[8m`,
		`yes (ops\x1b]0;owned\a)`,
		`web-1\x1b[2J`,
		`failed: exit 1: \x1b[31mRed\x1b[0m \u202eéà 日本`,
		`l\x1bx`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestPrintableEscapesOnlyWhatActsOnATerminal is printable's rule, case
// by case.
func TestPrintableEscapesOnlyWhatActsOnATerminal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain text, with spaces": "plain text, with spaces",
		"café 日本 🙂 \\x1b":         "café 日本 🙂 \\x1b",
		"\x1b[31mred\x1b[0m":      `\x1b[31mred\x1b[0m`,
		"a\tb\nc\rd":              `a\tb\nc\rd`,
		"bell\a del\x7f":          `bell\a del\x7f`,
		"\u009b2J":                `\u009b2J`, // C1's CSI
		"left\u202eright":         `left\u202eright`,
		"bad \xff\xfe utf-8":      `bad \xff\xfe utf-8`,
		"replacement \ufffd kept": "replacement \ufffd kept",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
