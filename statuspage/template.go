package statuspage

import (
	"fmt"
	"html/template"
	"strings"
	"time"
	"unicode/utf8"
)

// view is what the template renders: a snapshot, or the error that
// prevented reading one.
type view struct {
	Prefix   string
	Refresh  int // seconds; 0: no reload
	At       time.Time
	Snapshot *Snapshot
	Err      string
}

// shownRuns is how many of a job's latest runs the page lists.
const shownRuns = 5

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"when":     func(t, now time.Time) string { return when(t, now) },
	"stamp":    stamp,
	"dur":      shortDuration,
	"latest":   latest,
	"join":     strings.Join,
	"oneLine":  oneLine,
	"outcome":  func(j Job) outcomeView { return newOutcome(j) },
	"notEmpty": func(s []string) bool { return len(s) > 0 },
	"strip":    func(j Job, now time.Time) template.HTML { return newStrip(j, now).svg() },
}).Parse(pageHTML))

type outcomeView struct {
	Tick    time.Time
	By      string
	Outcome string
	Run     *Run
}

func newOutcome(j Job) outcomeView {
	tick, by, outcome, run := j.Outcome()
	return outcomeView{Tick: tick, By: by, Outcome: outcome, Run: run}
}

// latest is the job's last shownRuns runs, newest first.
func latest(runs []Run) []Run {
	var out []Run
	for i := len(runs) - 1; i >= 0 && len(out) < shownRuns; i-- {
		out = append(out, runs[i])
	}
	return out
}

// stamp is a time as the page shows it: in the server's zone, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

// when is a time relative to now: "in 25s", "3m ago".
func when(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now)
	if d >= 0 {
		return "in " + roughly(d)
	}
	return roughly(-d) + " ago"
}

func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Round(time.Minute).Minutes()))
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		if m := int(d.Minutes()) % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", int(d.Hours()), m)
		}
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

// oneLine is s on one line, cut to n bytes at most: a run's error may hold
// a command line, which the page does not show.
func oneLine(n int, s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n - 3
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}
<title>baton · {{.Prefix}}</title>
<style>
body{font:15px/1.4 system-ui,sans-serif;margin:0 auto;padding:0 12px 24px;max-width:1200px;color:#1b1b1b;background:#fff}
h1{font-size:1.3em;margin:16px 0 4px}h2{font-size:1.1em;margin:20px 0 6px}
.meta{color:#555;font-size:.9em}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%;min-width:560px}
th,td{text-align:left;vertical-align:top;padding:6px 8px;border-bottom:1px solid #ddd}
th{background:#f4f4f4;font-weight:600;white-space:nowrap}
code{font-size:.95em;white-space:nowrap}
ul{margin:0;padding:0;list-style:none}
li{white-space:nowrap}
.ok{color:#176b2c}.failed{color:#b00020;font-weight:600}.paused{color:#8a5a00;font-weight:600}.unscheduled{color:#8a5a00;font-weight:600}
.warn{background:#fff4e5;border:1px solid #f0b060;padding:8px 10px;margin:12px 0}
.warn li{white-space:normal}
.err{background:#fdecee;border:1px solid #e08a95;padding:8px 10px;margin:12px 0}
.none{color:#777}
.day{line-height:0;margin:2px 0 4px}
</style>
</head>
<body>
<h1>baton · <code>{{.Prefix}}</code></h1>
<p class="meta">Read from etcd at <span id="read-at">{{stamp .At}}</span>{{if .Refresh}}; reloads every {{.Refresh}}s{{end}}. Read-only: pause, resume and trigger with <code>baton pause|resume|trigger</code>.</p>
{{if .Err}}<p class="err" id="error">etcd could not be read: {{.Err}}</p>{{end}}
{{with .Snapshot}}{{$now := $.At}}
{{with .EmptyEtcd}}<p class="warn" id="empty-etcd">etcd came back empty: found {{stamp .At}} by {{.By}} ({{.Why}}).</p>{{end}}
<h2>Schedulers</h2>
{{range .Schedulers}}
<section class="scheduler" data-scheduler="{{.Name}}">
<p><b>{{.Name}}</b>: {{if .Leader}}led by <span class="leader">{{.Leader}}</span>{{if not .LeaderSince.IsZero}} since {{stamp .LeaderSince}} ({{when .LeaderSince $now}}){{end}}{{else}}<span class="leader none">no leader</span> (claim mode, or between leaders){{end}}</p>
<div class="scroll"><table>
<thead><tr><th>Job</th><th>Schedule</th><th>State</th><th>Next tick</th><th>Last runs</th><th>Not run, last day</th></tr></thead>
<tbody>
{{range .Jobs}}{{$o := outcome .}}
<tr class="job" data-job="{{.Name}}">
<td><b>{{.Name}}</b></td>
<td><code>{{.Spec}}</code>{{with .LastStarted}}<br><span class="started">ran at start of {{.}}</span>{{end}}</td>
<td class="state">{{if .Paused}}<span class="paused">paused</span>{{if .PausedBy}} by {{.PausedBy}}{{end}}{{with .PausedReason}}<br><span class="paused-reason">{{oneLine 120 .}}</span>{{end}}{{else}}active{{end}}{{if notEmpty .Running}}<br>running on {{join .Running ", "}}{{end}}{{with .Buffered}}<br><span class="buffered">{{len .}} buffered, from {{index . 0 | stamp}}</span>{{end}}{{range .BackfillsInProgress}}<br><span class="backfill">backfill {{.Done}}/{{if .Ticks}}{{.Ticks}}{{else}}?{{end}} of {{stamp .From}} to {{stamp .To}}</span>{{end}}
<br><span class="last-success">last success {{if .LastSuccess.IsZero}}<span class="none">never</span>{{else}}{{stamp .LastSuccess}} ({{when .LastSuccess $now}}){{end}}</span>{{if not .LastFailure.IsZero}}<br><span class="last-failure">last failure {{stamp .LastFailure}}{{if .ConsecutiveFailures}}, <span class="failed">{{.ConsecutiveFailures}} in a row</span>{{end}}</span>{{end}}</td>
<td class="next">{{if not .NotScheduledSince.IsZero}}<span class="unscheduled">not scheduled by anyone since {{stamp .NotScheduledSince}}</span><br><span class="meta">{{when .NotScheduledSince $now}}</span>{{else if .EndedAs}}<span class="ended">{{.EndedAs}}</span>{{else if .Next.IsZero}}-{{else}}{{stamp .Next}}<br><span class="meta">{{when .Next $now}}{{if .Paused}}, if resumed{{end}}</span>{{end}}</td>
<td class="runs"><div class="day">{{strip . $now}}</div>{{if $o.Outcome}}{{if not $o.Run}}<ul><li>{{stamp $o.Tick}} {{$o.By}} <b>{{$o.Outcome}}</b></li></ul>{{end}}{{end}}
{{with latest .History}}<ul>{{range .}}<li class="run">{{stamp .Tick}} · {{.Instance}} · {{if .Error}}<span class="failed">failed: {{oneLine 60 .Error}}</span>{{else}}<span class="ok">ok</span>{{end}} · {{dur .Duration}}{{if .Triggered}} · triggered{{else if .Backfill}} · backfill{{else}} · {{dur .Lateness}} late{{end}}{{if .CaughtUp}} · caught up{{end}}{{if .Recovered}} · <span class="recovered">recovered {{.Recovered}}</span>{{end}}</li>{{end}}</ul>{{else}}{{if not $o.Outcome}}<span class="none">no run yet</span>{{end}}{{end}}</td>
<td class="notrun">{{with .NotRunByReason}}<ul>{{range .}}<li><span class="failed">{{.Count}}</span> {{.Reason}}</li>{{end}}</ul>{{else}}<span class="none">none</span>{{end}}</td>
</tr>
{{else}}<tr><td colspan="6" class="none">no jobs</td></tr>{{end}}
</tbody></table></div>
</section>
{{else}}<p class="none">No scheduler has published jobs under {{$.Prefix}}.</p>{{end}}
{{if .Schedulers}}<p class="meta" id="strip-legend">Above each job's last runs, its last day: the 24 hours up to now, oldest left; a mark for each run kept in the history (green ok, red failed), amber over an hour with ticks that did not run. Hover for the run or the reasons.</p>{{end}}
{{with .Ignored}}<div class="warn" id="ignored-keys">Ignored, as no scheduler wrote them:<ul>{{range .}}
<li class="ignored">{{if gt .Keys 1}}{{.Keys}} keys under {{else}}key {{end}}<code>{{.Key}}</code>: {{.Why}}</li>{{end}}</ul></div>{{end}}

<h2>Elections</h2>
{{if .Elections}}<div class="scroll"><table>
<thead><tr><th>Election</th><th>Leader</th><th>Since</th><th>Candidates</th><th>Fence</th></tr></thead>
<tbody>{{range .Elections}}
<tr class="election" data-election="{{.Name}}"><td>{{.Name}}</td><td class="leader">{{if .Leader}}{{.Leader}}{{else if .Lease}}lease {{.Lease}}{{else}}-{{end}}</td><td>{{stamp .Since}}{{if not .Since.IsZero}} ({{when .Since $now}}){{end}}</td><td>{{.Candidates}}</td><td>{{.Fence}}</td></tr>{{end}}
</tbody></table></div>{{else}}<p class="none">No elections under {{.Prefix}}.</p>{{end}}

<h2>Locks</h2>
{{if .Locks}}<div class="scroll"><table>
<thead><tr><th>Lock</th><th>Holder</th><th>Waiting</th><th>Fence</th></tr></thead>
<tbody>{{range .Locks}}
<tr class="lock" data-lock="{{.Name}}"><td>{{.Name}}</td><td>{{if .Holder}}{{.Holder}}{{else if .Lease}}lease {{.Lease}}{{else}}-{{end}}</td><td>{{.Waiting}}</td><td>{{.Fence}}</td></tr>{{end}}
</tbody></table></div>{{else}}<p class="none">No locks under {{.Prefix}}.</p>{{end}}
{{end}}
</body>
</html>
`
