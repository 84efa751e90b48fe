package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine is what RESULTS.md says about where and when the numbers came from.
type machine struct {
	date       time.Time
	cores      int
	os, kernel string
	goVersion  string
	redis      string
	modules    string
	baton      string
	loadBefore string
	loadAfter  string
	elapsed    time.Duration
	parallel   bool
}

func describeMachine() machine {
	m := machine{date: time.Now().UTC(), cores: runtime.NumCPU(), goVersion: runtime.Version(), loadBefore: loadavg()}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.os = strings.Trim(v, `"`)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	m.redis = output("redis-server", "--version")
	m.modules = strings.ReplaceAll(output("go", "list", "-m", "github.com/robfig/cron/v3", "github.com/go-co-op/gocron/v2",
		"github.com/redis/go-redis/v9", "go.etcd.io/etcd/client/v3"), "\n", ", ")
	rev := output("git", "rev-parse", "--short", "HEAD")
	// Other work in the same checkout may be under way: say what the built
	// baton had beyond the commit.
	if dirty := output("git", "status", "--porcelain", "--", "../../cronx", "../../election", "../../convox", "../../internal/clock"); dirty != "" {
		var files []string
		for _, l := range strings.Split(dirty, "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				files = append(files, f[1])
			}
		}
		rev += " plus uncommitted changes to " + strings.Join(files, ", ")
	}
	m.baton = rev
	return m
}

func output(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(b))
}

// loadavg is the 1, 5 and 15 minute load averages, as uptime prints them.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// cells are one result's columns: duplicates, missed, handover, failover,
// overlaps.
func cells(r result) [5]string {
	na := [5]string{"n/a", "n/a", "n/a", "n/a", "n/a"}
	if r.skipped != "" {
		return na
	}
	if r.err != nil {
		return [5]string{"error", "error", "", "", ""}
	}
	c := r.count
	dup := fmt.Sprintf("%d/%d", c.Duplicates, c.Ticks)
	if c.Extra > c.Duplicates {
		dup += fmt.Sprintf(" (+%d runs)", c.Extra)
	}
	out := [5]string{dup, fmt.Sprintf("%d/%d", c.Missed, c.Ticks), "—", "—", fmt.Sprint(c.Overlaps)}
	if r.fault != nil {
		rec := "none"
		if c.Recovery >= 0 {
			rec = ms(c.Recovery)
			if c.RecoveredBy == r.fault.Instance {
				rec += " (itself)"
			}
		}
		if r.scenario.fault == deploy {
			out[2] = rec
		} else {
			out[3] = rec
		}
	}
	return out
}

func summary(r result) string {
	if r.skipped != "" {
		return "n/a: " + r.skipped
	}
	if r.err != nil {
		return "error: " + r.err.Error()
	}
	c := cells(r)
	return fmt.Sprintf("duplicates %s, missed %s, handover %s, failover %s, overlaps %s", c[0], c[1], c[2], c[3], c[4])
}

// table is the results as a Markdown table, one row per contender and
// scenario.
func table(rs []result) string {
	var b strings.Builder
	b.WriteString("| contender | scenario | duplicates | missed | handover | failover | overlaps |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	// Grouped by contender, in the order of the contender list.
	for _, c := range contenders {
		for _, r := range rs {
			if r.contender.key != c.key {
				continue
			}
			x := cells(r)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.name, r.scenario.name, x[0], x[1], x[2], x[3], x[4])
		}
	}
	return b.String()
}

// details lists, per run, what the table compresses: the window, who ran how
// often, which replica the fault hit and who recovered.
func details(rs []result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "- **%s, %s**: ", r.contender.name, r.scenario.name)
		switch {
		case r.skipped != "":
			fmt.Fprintf(&b, "n/a (%s)\n", r.skipped)
			continue
		case r.err != nil:
			fmt.Fprintf(&b, "error: %v\n", r.err)
			continue
		}
		c := r.count
		fmt.Fprintf(&b, "ticks %s–%s (%d), %d runs", r.from.UTC().Format("15:04:05"), r.to.UTC().Format("15:04:05"), c.Ticks, c.Runs)
		var per []string
		for _, name := range sortedKeys(c.PerInstance) {
			per = append(per, fmt.Sprintf("%s %d", name, c.PerInstance[name]))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(per, ", "))
		if r.fault != nil {
			fmt.Fprintf(&b, "; fault at %s on %s", r.fault.At.UTC().Format("15:04:05.000"), r.fault.Instance)
			if c.Recovery >= 0 {
				fmt.Fprintf(&b, ", next run by %s after %s", c.RecoveredBy, ms(c.Recovery))
			}
		}
		for _, n := range r.notes {
			fmt.Fprintf(&b, "; %s", n)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	var k []string
	for name := range m {
		k = append(k, name)
	}
	for i := 1; i < len(k); i++ {
		for j := i; j > 0 && k[j] < k[j-1]; j-- {
			k[j], k[j-1] = k[j-1], k[j]
		}
	}
	return k
}

const (
	beginMark = "<!-- BEGIN GENERATED by go run ./cmd/compare: edits here are overwritten -->"
	endMark   = "<!-- END GENERATED -->"
)

// writeResults replaces the generated section of path, keeping the text
// around it (the explanations), or creates the file.
func writeResults(path string, rs []result, m machine, e *env, argv string) error {
	var b strings.Builder
	b.WriteString(beginMark + "\n\n")
	fmt.Fprintf(&b, "Run %s UTC, %s in all.\n\n", m.date.Format("2006-01-02 15:04"), m.elapsed)
	fmt.Fprintf(&b, "Command (in `internal/compare`): `%s`\n\n", strings.Replace(argv, os.Args[0], "go run ./cmd/compare", 1))
	b.WriteString(table(rs))
	b.WriteString("\n`duplicates`: ticks run more than once, of the ticks counted (with the extra runs when a tick ran three times). " +
		"`missed`: ticks nobody ran. `handover`: SIGTERM → start of the next run by another replica. " +
		"`failover`: kill -9 or SIGSTOP → start of the next run by another replica (\"itself\": only the faulted replica ran again). " +
		"`overlaps`: runs still going when another replica started a run.\n\n")
	fmt.Fprintf(&b, "Workload: one job every second (`* * * * * *`), %v of work, %v lock expiry and session TTL everywhere; "+
		"%v per run; kill: replacement after %v; deploy: replacement %v before the SIGTERM; pause: SIGSTOP for %v. ",
		e.work, e.ttl, e.duration, e.restart, e.surge, e.pauseFor)
	if m.parallel {
		b.WriteString("The contenders of a scenario ran side by side, sharing one redis-server and one etcd member.\n\n")
	} else {
		b.WriteString("The contenders of a scenario ran one after another.\n\n")
	}
	b.WriteString("Machine:\n\n")
	fmt.Fprintf(&b, "- %d cores, %s, Linux %s, %s\n", m.cores, m.os, m.kernel, m.goVersion)
	fmt.Fprintf(&b, "- %s\n", m.redis)
	fmt.Fprintf(&b, "- etcd: `baton etcd` (embedded etcd server %s), one member\n", etcdVersion())
	fmt.Fprintf(&b, "- modules: %s\n", m.modules)
	fmt.Fprintf(&b, "- baton at %s\n", m.baton)
	fmt.Fprintf(&b, "- load average (uptime) before: %s; after: %s — the machine was shared with other test runs\n\n", m.loadBefore, m.loadAfter)
	b.WriteString("Per run:\n\n")
	b.WriteString(details(rs))
	b.WriteString("\n" + endMark)

	old, err := os.ReadFile(path)
	var text string
	switch {
	case err == nil && strings.Contains(string(old), beginMark) && strings.Contains(string(old), endMark):
		s := string(old)
		i := strings.Index(s, beginMark)
		j := strings.Index(s, endMark) + len(endMark)
		text = s[:i] + b.String() + s[j:]
	case err == nil || os.IsNotExist(err):
		text = "# baton and the alternatives, measured\n\n" + b.String() + "\n"
	default:
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

func etcdVersion() string {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "go.etcd.io/etcd/server/v3")
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/batonhq/baton").Output()
	if err == nil {
		cmd.Dir = strings.TrimSpace(string(root))
	}
	b, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
