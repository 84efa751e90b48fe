package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// report is what a figure measured: tables and a few lines on what they
// mean.
type report struct {
	figure figure
	args   []string
	load   [2]string // load average before and after
	took   time.Duration
	tables []*table
	notes  []string
	// broken lists the promises the figure saw broken: the figure fails.
	broken []string
}

type table struct {
	header []string
	rows   [][]string
}

func (r *report) table(header ...string) *table {
	t := &table{header: header}
	r.tables = append(r.tables, t)
	return t
}

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// broke records a promise the figure saw broken, which fails it.
func (r *report) broke(format string, args ...any) {
	r.broken = append(r.broken, fmt.Sprintf(format, args...))
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "\n## %s\n\n", r.figure.name)
	fmt.Fprintf(w, "%s\n\n", r.figure.summary)
	fmt.Fprintf(w, "    go run ./internal/bench %s\n\n", strings.Join(append(slices.Clone(r.args), r.figure.name), " "))
	fmt.Fprintf(w, "Load average before %s, after %s; took %s.\n", r.load[0], r.load[1], r.took.Round(time.Second))
	for _, t := range r.tables {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "| %s |\n", strings.Join(t.header, " | "))
		seps := make([]string, len(t.header))
		for i := range seps {
			seps[i] = "---"
		}
		fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
		for _, row := range t.rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
	if len(r.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	if len(r.broken) > 0 {
		fmt.Fprintf(w, "\nBROKEN:\n\n")
		for _, b := range r.broken {
			fmt.Fprintf(w, "- %s\n", b)
		}
	}
}

// argsFor returns the flags, other than their defaults, that the figure
// name depends on, so that its printed command reruns it as measured.
func (c config) argsFor(name string) []string {
	d := defaultConfig()
	var args []string
	add := func(flagName string, changed bool, value string) {
		if changed {
			args = append(args, "-"+flagName+"="+value)
		}
	}
	if c.auth {
		args = append(args, "-auth")
	}
	switch name {
	case "handover":
		add("handovers", c.handovers != d.handovers, strconv.Itoa(c.handovers))
	case "failover":
		add("failover-ttls", !slices.Equal(c.failoverTTLs, d.failoverTTLs), joinInts(c.failoverTTLs))
		add("failover-trials", c.failoverTrials != d.failoverTrials, strconv.Itoa(c.failoverTrials))
	case "claim":
		add("claim-jobs", !slices.Equal(c.claimJobs, d.claimJobs), joinInts(c.claimJobs))
		add("claim-ticks", c.claimTicks != d.claimTicks, strconv.Itoa(c.claimTicks))
	case "jobs":
		add("jobs", !slices.Equal(c.jobs, d.jobs), joinInts(c.jobs))
		add("jobs-window", c.jobsWindow != d.jobsWindow, c.jobsWindow.String())
		add("jobs-startup", c.jobsStartup != d.jobsStartup, c.jobsStartup.String())
	case "crowd":
		add("crowd-jobs", !slices.Equal(c.crowdJobs, d.crowdJobs), joinInts(c.crowdJobs))
		add("crowd-replicas", c.crowdReplicas != d.crowdReplicas, strconv.Itoa(c.crowdReplicas))
	case "replicas":
		add("replicas", !slices.Equal(c.replicas, d.replicas), joinInts(c.replicas))
		add("replica-procs", !slices.Equal(c.replicaProcs, d.replicaProcs), joinInts(c.replicaProcs))
		add("replicas-window", c.replicasWindow != d.replicasWindow, c.replicasWindow.String())
	case "idle":
		add("idle-window", c.idleWindow != d.idleWindow, c.idleWindow.String())
	}
	return args
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// intListValue is a flag of comma-separated positive integers.
type intListValue struct{ p *[]int }

func intList(fs *flag.FlagSet, p *[]int, name, usage string) {
	fs.Var(intListValue{p}, name, usage)
}

func (v intListValue) String() string {
	if v.p == nil {
		return ""
	}
	return joinInts(*v.p)
}

func (v intListValue) Set(s string) error {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q: want positive whole numbers, comma-separated", s)
		}
		out = append(out, n)
	}
	*v.p = out
	return nil
}

// quantile returns the q-quantile of samples by nearest rank, 0 when there
// are none. It sorts samples.
func quantile(samples []time.Duration, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	i := int(q*float64(len(samples)) + 0.5)
	return samples[min(max(i-1, 0), len(samples)-1)]
}

func maxOf(samples []time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	return slices.Max(samples)
}

// ms formats d in milliseconds, with a precision that suits its size.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f < 0:
		return fmt.Sprintf("%.1f ms", f)
	case f < 10:
		return fmt.Sprintf("%.2f ms", f)
	case f < 1000:
		return fmt.Sprintf("%.0f ms", f)
	default:
		return fmt.Sprintf("%.2f s", f/1000)
	}
}

// num formats a count or rate with three significant digits or so.
func num(f float64) string {
	switch {
	case f == 0:
		return "0"
	case f < 0.1:
		return strconv.FormatFloat(f, 'f', 3, 64)
	case f < 10:
		return strconv.FormatFloat(f, 'f', 2, 64)
	case f < 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
}

// mib formats a byte count in MiB.
func mib(b float64) string { return num(b/(1<<20)) + " MiB" }

// kib formats a byte count in KiB.
func kib(b float64) string { return num(b/(1<<10)) + " KiB" }

// ratio formats a/b, or "–" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return num(a/b) + "×"
}

// perJob formats the bytes per job of alone and coordinated, and their ratio.
func perJob(alone, coordinated float64, n int) string {
	return num(alone/float64(n)) + " B → " + num(coordinated/float64(n)) + " B (" + ratio(coordinated, alone) + ")"
}
