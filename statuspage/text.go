package statuspage

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/internal/emptyetcd"
)

// WriteText writes the snapshot as aligned tables, as `baton status` prints
// it: times in the local zone, one line per job, then the keys ignored.
// What was read from etcd is printed with control bytes and characters
// that print nothing escaped ("\x1b"), so that no value acts on the
// terminal.
func (r *Snapshot) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if e := r.EmptyEtcd; e != nil {
		fmt.Fprintf(w, "etcd came back empty: found at %s by %s (%s); lost with its data: %s.\n\n",
			local(e.At), printable(e.By), printable(e.Why), emptyetcd.Lost)
	}
	if len(r.Elections) == 0 {
		fmt.Fprintf(w, "No elections under %s.\n", printable(r.Prefix))
	} else {
		fmt.Fprintln(w, "ELECTION\tLEADER\tSINCE\tCANDIDATES")
		for _, e := range r.Elections {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", printable(e.Name), who(e.Leader, e.Lease), local(e.Since), e.Candidates)
		}
	}
	fmt.Fprintln(w)
	if len(r.Locks) == 0 {
		fmt.Fprintf(w, "No locks under %s.\n", printable(r.Prefix))
	} else {
		fmt.Fprintln(w, "LOCK\tHOLDER\tWAITING")
		for _, l := range r.Locks {
			fmt.Fprintf(w, "%s\t%s\t%d\n", printable(l.Name), who(l.Holder, l.Lease), l.Waiting)
		}
	}
	fmt.Fprintln(w)
	r.writeJobs(w)
	if len(r.Ignored) > 0 {
		fmt.Fprintln(w)
	}
	for _, k := range r.Ignored {
		what := "key"
		if k.Keys > 1 {
			what = fmt.Sprintf("%d keys under", k.Keys)
		}
		fmt.Fprintf(w, "ignored %s %q: %s\n", what, k.Key, printable(k.Why))
	}
	return w.Flush()
}

// writeJobs writes the table of the schedulers' jobs.
func (r *Snapshot) writeJobs(w io.Writer) {
	if len(r.Schedulers) == 0 {
		fmt.Fprintf(w, "No scheduler has published jobs under %s.\n", printable(r.Prefix))
		return
	}
	fmt.Fprintln(w, "SCHEDULER\tJOB\tSPEC\tPAUSED\tLAST RUN\tBY\tRESULT\tLAST SUCCESS\tLAST FAILURE\tFAILURES\tRUNNING ON\tNEXT RUN\tNOT RUN (1D)")
	for _, s := range r.Schedulers {
		if len(s.Jobs) == 0 {
			fmt.Fprintf(w, "%s\t(no jobs)\t\t\t\t\t\t\t\t\t\t\t\n", printable(s.Name))
		}
		for _, j := range s.Jobs {
			paused := "no"
			if j.Paused {
				paused = "yes"
				switch {
				case j.PausedReason != "":
					paused += " (" + printable(dash(j.PausedBy)) + ": " + printable(oneLine(60, j.PausedReason)) + ")"
				case j.PausedBy != "":
					paused += " (" + printable(j.PausedBy) + ")"
				}
			}
			tick, by, result := lastRun(j)
			running := "-"
			if len(j.Running) > 0 {
				running = strings.Join(j.Running, ",")
			}
			notRun := "-"
			if counts := j.NotRunByReason(); len(counts) > 0 {
				var parts []string
				for _, c := range counts {
					parts = append(parts, fmt.Sprintf("%s %d", c.Reason, c.Count))
				}
				notRun = strings.Join(parts, ",")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", printable(s.Name), printable(j.Name), printable(j.Spec),
				paused, local(tick), printable(dash(by)), printable(result), local(j.LastSuccess), local(j.LastFailure), j.ConsecutiveFailures,
				printable(running), nextOrEnd(j), notRun)
		}
	}
}

// lastRun is the job's most recent run as the table shows it.
func lastRun(j Job) (tick time.Time, by, result string) {
	tick, by, outcome, h := j.Outcome()
	switch {
	case outcome == "":
		return tick, by, "-"
	case h == nil:
		return tick, by, outcome
	}
	result = "ok"
	if h.Error != "" {
		result = "failed: " + oneLine(60, h.Error)
	}
	if h.TimedOut {
		result = "timed out"
	}
	result += ", " + shortDuration(time.Duration(h.DurationSeconds*float64(time.Second)))
	if h.Triggered {
		result += " (triggered)"
	}
	if h.Attempt > 1 {
		result += fmt.Sprintf(" (attempt %d)", h.Attempt)
	}
	if h.CaughtUp {
		result += " (caught up)"
	}
	return tick, by, result
}

func who(identity, lease string) string {
	switch {
	case identity != "":
		return printable(identity)
	case lease != "":
		return "lease " + lease
	}
	return "-"
}

func local(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// nextOrEnd is the job's next run, or how it ended.
func nextOrEnd(j Job) string {
	if e := j.EndedAs(); e != "" {
		return e
	}
	return local(j.Next)
}
