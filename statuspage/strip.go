package statuspage

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton/cronx"
)

// A job's last day is drawn as a strip, an inline SVG that needs no
// script: the day from left to right, a mark at each run the history
// holds (green if it succeeded, red if it failed) and, behind them, a band
// over each hour with ticks that no replica ran (amber). Hovering a mark or
// a band shows its <title>: the run's time, replica and error, or the
// hour's counts by reason. Only what etcd keeps is drawn: the history's
// last runs (ten) and the counts of ticks not run by hour, so an hour with
// neither is blank whether its ticks ran or the job had none.

// NotRunHour is one hour's count of a job's ticks that no replica ran.
type NotRunHour struct {
	// Hour is the hour's start.
	Hour time.Time `json:"hour"`
	// Counts are by reason (cronx.Reason's String), each above zero.
	Counts map[string]int `json:"counts"`
}

// notRunHours are hs as a Job has them.
func notRunHours(hs []cronx.NotRunHour) []NotRunHour {
	var out []NotRunHour
	for _, h := range hs {
		counts := map[string]int{}
		for r, n := range h.Counts {
			if n > 0 {
				counts[r.String()] = n
			}
		}
		if len(counts) > 0 {
			out = append(out, NotRunHour{Hour: h.Hour, Counts: counts})
		}
	}
	return out
}

// The strip's size: the day at a few pixels an hour, a run's mark wide
// enough to hover.
const (
	stripSpan   = 24 * time.Hour
	stripWidth  = 288 // 12 px an hour
	stripHeight = 18
	markWidth   = 3
)

// stripView is what the strip's template draws.
type stripView struct {
	Width, Height int
	Label         string // the day in words, for screen readers
	Bands         []stripShape
	Marks         []stripShape
}

// stripShape is a band or a mark: where, of what kind, and its hover text.
type stripShape struct {
	X, W  int
	Class string // "ok", "failed", "notrun"
	Title string
}

// newStrip is the strip of j's day before now.
func newStrip(j Job, now time.Time) stripView {
	start := now.Add(-stripSpan)
	x := func(t time.Time) int {
		return int(int64(t.Sub(start)) * stripWidth / int64(stripSpan))
	}
	v := stripView{Width: stripWidth, Height: stripHeight}
	notRun := 0
	for _, h := range j.NotRunHours {
		from, to := maxTime(h.Hour, start), minTime(h.Hour.Add(time.Hour), now)
		if !to.After(from) {
			continue
		}
		n, reasons := 0, make([]string, 0, len(h.Counts))
		for r, c := range h.Counts {
			n += c
			reasons = append(reasons, fmt.Sprintf("%s %d", r, c))
		}
		sort.Strings(reasons)
		notRun += n
		x0 := x(from)
		v.Bands = append(v.Bands, stripShape{X: x0, W: max(x(to)-x0, 1), Class: "notrun",
			Title: fmt.Sprintf("%s–%s: %d not run: %s", h.Hour.Local().Format("15:04"), h.Hour.Add(time.Hour).Local().Format("15:04"),
				n, strings.Join(reasons, ", "))})
	}
	ran, failed := 0, 0
	for _, r := range j.History {
		if r.Tick.Before(start) || r.Tick.After(now) {
			continue
		}
		s := stripShape{X: min(x(r.Tick), stripWidth-markWidth), W: markWidth, Class: "ok"}
		what := "ok"
		if r.Error != "" {
			s.Class, what = "failed", "failed: "+oneLine(60, r.Error)
			failed++
		} else {
			ran++
		}
		s.Title = fmt.Sprintf("%s · %s · %s · %s", stamp(r.Tick), r.Instance, what, shortDuration(r.Duration()))
		if r.Triggered {
			s.Title += " · triggered"
		}
		v.Marks = append(v.Marks, s)
	}
	v.Label = fmt.Sprintf("last day: %d ran, %d failed (of the runs kept), %d not run", ran, failed, notRun)
	return v
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// svg draws the strip. Colours are attributes, not a stylesheet's, so that
// the strip reads alike wherever it is embedded. It is written directly,
// every text escaped, rather than through html/template: a page of a
// thousand jobs draws tens of thousands of shapes, and html/template's
// escaping of each attribute made the strips four fifths of the page's
// rendering time.
func (v stripView) svg() template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg class="strip" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		v.Width, v.Height, v.Width, v.Height, esc(v.Label))
	fmt.Fprintf(&b, `<rect class="strip-day" x="0" y="0" width="%d" height="%d" fill="#eeeeee"><title>%s</title></rect>`,
		v.Width, v.Height, esc(v.Label))
	for _, shapes := range [][]stripShape{v.Bands, v.Marks} {
		for _, s := range shapes {
			fmt.Fprintf(&b, `<rect class="strip-%s" x="%d" y="0" width="%d" height="%d" fill="%s"><title>%s</title></rect>`,
				s.Class, s.X, s.W, v.Height, stripColours[s.Class], esc(s.Title))
		}
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// stripColours are the fills of the strip's shapes by class.
var stripColours = map[string]string{"ok": "#2e9d4a", "failed": "#c62828", "notrun": "#f0b060"}
