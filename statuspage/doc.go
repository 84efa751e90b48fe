// Package statuspage shows what baton coordinates under one key prefix, for
// people: a server-rendered HTML page, and the Snapshot it renders, which
// WriteText prints as the tables of `baton status` (which also prints it as
// JSON).
//
// A Snapshot holds every election and lock under the prefix with who leads
// or holds it and since when, and every scheduler with its leader and each
// job's schedule, pause, next tick (or, for a job past its end or at its
// maximum of runs, how it ended), latest runs (instance, lateness,
// duration, outcome, whether it caught up a missed tick) and ticks not
// run, in all and by hour. It is read with a few reads of
// etcd, decoded by the election and cronx readers that own the values.
// Reads are separate, so a snapshot taken while leadership changes hands
// may show a scheduler's jobs from just before or after the change. A key
// under P/jobs/ that no scheduler wrote (a name that is not valid, put with
// etcdctl) is skipped and listed in Snapshot.Ignored, which the page and
// WriteText show; it never fails the snapshot. WriteText escapes control
// bytes and characters that print nothing in what etcd holds ("\x1b"),
// keeping ordinary Unicode.
//
// Page is an http.Handler an application mounts on its own server:
//
//	page, err := statuspage.New(client, "/baton")
//	mux.Handle("GET /baton/", http.StripPrefix("/baton", page))
//
// The page is plain HTML with no script: each job's last day is an inline
// SVG drawn on the server, a mark at each run the history keeps and a band
// over each hour with ticks not run, whose details are SVG <title>s shown
// on hover. It reloads itself with a meta refresh, fits a phone's screen, and escapes everything read from etcd.
// It is read-only (pause, resume and trigger stay in the CLI and the API),
// and it shows no credential, environment value or command line: only
// identities, job names, specs, lease ids and run errors. Put it behind the
// same access control as any operator page; every request reads etcd.
package statuspage
