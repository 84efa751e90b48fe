package chaos

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// maxLogLines bounds the log lines shown for one violation.
const maxLogLines = 80

// logsAround returns the lines that the replicas of job's scheduler logged
// within v's span, each prefixed with its replica, in time order: what each
// replica fired, claimed, skipped and why, around the runs v names. It
// returns nothing for a violation without a span.
func (h *harness) logsAround(v Violation) []string {
	if v.Span.From.IsZero() {
		return nil
	}
	var sched string
	for _, s := range schedulers {
		if s.Name == v.Job {
			sched = s.Scheduler
		}
	}
	if sched == "" {
		return nil
	}
	type line struct {
		at   time.Time
		text string
	}
	var all []line
	h.eachLogLine(sched, func(id, text string) {
		if at, ok := logTime(text); ok && !at.Before(v.Span.From) && !at.After(v.Span.To) {
			all = append(all, line{at, id + " " + text})
		}
	})
	slices.SortStableFunc(all, func(a, b line) int { return a.at.Compare(b.at) })
	var out []string
	for i, l := range all {
		if i == maxLogLines {
			out = append(out, fmt.Sprintf("... %d more", len(all)-i))
			break
		}
		out = append(out, l.text)
	}
	return out
}

// logTime reads the time a baton log line was written, its "time=" field.
func logTime(s string) (time.Time, bool) {
	v, ok := strings.CutPrefix(s, "time=")
	if !ok {
		return time.Time{}, false
	}
	v, _, _ = strings.Cut(v, " ")
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// Skip is a tick a replica reported not run, and why, as its log says.
type Skip struct {
	Job      string
	Tick     time.Time // the tick, as the replica's clock named it
	Instance string
	At       time.Time // when the replica logged it
	Why      string    // the log's reason
}

// The reasons of skips that the checker weighs (cronx's log messages).
const (
	skipBusy   = "a run is in progress"
	skipHeldUp = "a later tick of the job came due while this one waited for etcd"
	// skipOvertaken: a tick of a Replace job still waiting for the run it
	// replaces to end gave way, without starting, to a later tick.
	skipOvertaken = "a later run was claimed while this one waited to start"
	// skipReplaced is not cronx's: baton crontab logs that it stops a
	// command its next tick replaced. The command had started, but may
	// not have reached the sink yet.
	skipReplaced = "replaced"
)

// skipPrefix starts the message of every tick cronx logs as skipped;
// replacedPrefix that of a command stopped by a later tick, whose cause
// says so.
const (
	skipPrefix     = `msg="cronx: skipped: `
	replacedPrefix = `msg="baton crontab: stopping the command" `
	replacedCause  = `cause="cronx: run replaced by a later tick"`
)

// skips reads the ticks that the replicas of every scheduler logged as
// skipped.
func (h *harness) skips() []Skip {
	var out []Skip
	for _, s := range schedulers {
		h.eachLogLine(s.Scheduler, func(id, text string) {
			if sk, ok := parseSkip(text); ok {
				sk.Instance = id
				out = append(out, sk)
			}
		})
	}
	return out
}

// eachLogLine calls fn with each line that each replica's process of
// scheduler sched logged, a replica's lines in order; a replica without a
// log has none.
func (h *harness) eachLogLine(sched string, fn func(id, text string)) {
	for _, n := range h.nodes {
		f, err := os.Open(filepath.Join(h.dir, n.id+"-"+sched+".log"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			fn(n.id, sc.Text())
		}
		f.Close()
	}
}

// parseSkip reads a log line of a skipped tick, or of a command stopped as
// its next tick replaced it:
//
//	time=... level=... msg="cronx: skipped: WHY" job=JOB tick=TICK
//	time=... level=... msg="baton crontab: stopping the command" job=JOB tick=TICK cause="cronx: run replaced by a later tick" ...
func parseSkip(line string) (Skip, bool) {
	at, ok := logTime(line)
	if !ok {
		return Skip{}, false
	}
	var why, rest string
	if _, r, ok := strings.Cut(line, skipPrefix); ok {
		if why, rest, ok = strings.Cut(r, `"`); !ok {
			return Skip{}, false
		}
	} else if _, r, ok := strings.Cut(line, replacedPrefix); ok && strings.Contains(r, replacedCause) {
		why, rest = skipReplaced, r
	} else {
		return Skip{}, false
	}
	sk := Skip{At: at, Why: why}
	for _, f := range strings.Fields(rest) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "job":
			sk.Job = v
		case "tick":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return Skip{}, false
			}
			sk.Tick = t
		}
	}
	return sk, sk.Job != "" && !sk.Tick.IsZero()
}
