package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCrontabReloadsOnSIGHUP: on SIGHUP baton crontab reads its file again.
// Reloads of an unchanged file drop no tick and run none twice; an edited
// file's jobs replace the old ones; a file that no longer parses leaves the
// jobs running as they were.
func TestCrontabReloadsOnSIGHUP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := separateEtcd(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	file := filepath.Join(dir, "crontab")
	entry := func(job string) []byte {
		return []byte(job + `: * * * * * * sleep 2; echo "$BATON_JOB $BATON_TICK $BATON_ID $BATON_FENCE" >> ` + ledger + "\n")
	}
	if err := os.WriteFile(file, entry("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A TTL longer than a pause of etcd: a session lost in one would drop
	// ticks that the reloads did not.
	p := startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + etcd, "BATON_ID=r1"},
		"crontab", "--seconds", "--ttl", "6", file)
	count := func(job string) int {
		n := 0
		for _, l := range readLedger(t, ledger) {
			if l.job == job {
				n++
			}
		}
		return n
	}
	until(t, 20*time.Second, "a first run", func() bool { return count("a") > 0 })

	// Reloads a third of a second apart fall at every point of a second.
	for range 9 {
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(330 * time.Millisecond)
	}
	n := count("a")
	until(t, 5*time.Second, "a run after the reloads", func() bool { return count("a") > n+1 })
	// Runs overlap (each sleeps 2 s): a run of a tick may still go on when
	// a later one is in the ledger. Every tick from the first to the last
	// comes in, each once.
	var dropped string
	ok := func() bool {
		ticks := map[string]bool{}
		var first, last time.Time
		for _, l := range readLedger(t, ledger) {
			if ticks[l.tick] {
				t.Fatalf("tick %s ran twice", l.tick)
			}
			ticks[l.tick] = true
			tick, err := time.Parse(time.RFC3339, l.tick)
			if err != nil {
				t.Fatal(err)
			}
			if first.IsZero() || tick.Before(first) {
				first = tick
			}
			if tick.After(last) {
				last = tick
			}
		}
		want := int(last.Sub(first)/time.Second) + 1
		dropped = fmt.Sprintf("%d ticks ran from %v to %v, want %d", len(ticks), first, last, want)
		return len(ticks) == want
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the reloads dropped a tick", dropped)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := os.WriteFile(file, entry("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	until(t, 5*time.Second, "a run of the edited file's job", func() bool { return count("b") > 0 })
	nb := count("b")
	if err := os.WriteFile(file, []byte("b: * * *\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitOutput("reload: the jobs stay as they were", 5*time.Second)
	until(t, 5*time.Second, "b to run on after a bad reload", func() bool { return count("b") > nb+1 })
	// A run of a may still end, and write its line, after b has run: its
	// tick tells when it was due. No tick of a may come after b's first.
	var firstB time.Time
	for _, l := range readLedger(t, ledger) {
		tick, _ := time.Parse(time.RFC3339, l.tick)
		if l.job == "b" && (firstB.IsZero() || tick.Before(firstB)) {
			firstB = tick
		}
	}
	for _, l := range readLedger(t, ledger) {
		if tick, _ := time.Parse(time.RFC3339, l.tick); l.job == "a" && tick.After(firstB) {
			t.Errorf("a ran for tick %s, after the file no longer had it (b's first tick %v)", l.tick, firstB)
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("baton exited %d after SIGTERM", code)
	}
}
