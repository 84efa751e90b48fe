package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestMissedOrDoubledTickFailsTheHandover: a ledger with ticks missed and
// a tick run twice fails the handover figure and the bench, and each
// tick is told with what etcd kept of it: who claimed it, how its run
// ended, and the SIGTERM nearest to it.
func TestMissedOrDoubledTickFailsTheHandover(t *testing.T) {
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := time.Date(2026, 3, 2, 9, 0, 10, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	job := "/baton/jobs/handover/tick/"
	var history []cronx.Record
	ran := func(s int, by string, started, took time.Duration, err string) {
		history = append(history, cronx.Record{Tick: at(s), Instance: by, Start: at(s).Add(started), Duration: took, Error: err})
		b, _ := json.Marshal(history)
		if _, err := cli.Put(ctx, job+"history", string(b)); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(s int, by string) {
		if _, err := cli.Put(ctx, job+"last", claimcond.Value(at(s).UnixNano(), by)); err != nil {
			t.Fatal(err)
		}
	}
	// r1 runs :10; r2 leads from :11, and its run of :12 dies as it
	// starts; :13 runs on r2 and r3; nobody claims :14; r3 runs :15.
	claim(0, "r1")
	ran(0, "r1", 3*time.Millisecond, 20*time.Millisecond, "")
	claim(1, "r2")
	ran(1, "r2", 4*time.Millisecond, 20*time.Millisecond, "")
	claim(2, "r2")
	ran(2, "r2", 6*time.Millisecond, 28*time.Millisecond, "exit status 143")
	claim(3, "r3")
	ran(3, "r3", 5*time.Millisecond, 20*time.Millisecond, "")
	claim(5, "r3")
	ran(5, "r3", 5*time.Millisecond, 20*time.Millisecond, "")
	// :16's run on r3, whose shell a loaded machine held past the start
	// allowance, is ended by r3's SIGTERM before it writes its line: it
	// ran, and the report says so without failing.
	claim(6, "r3")
	ran(6, "r3", 17*time.Millisecond, 1504*time.Millisecond, "exit status 143")
	line := func(s int, by string) ledgerLine { return ledgerLine{tick: at(s), id: by} }
	lines := []ledgerLine{line(0, "r1"), line(1, "r2"), line(3, "r2"), line(3, "r3"), line(5, "r3"), line(7, "r1")}

	c := &crontabCluster{name: "handover", cli: cli}
	r := &report{}
	c.judge(ctx, r, tally(lines), []sigterm{{leader: "r2", at: at(2).Add(9 * time.Millisecond)}, {leader: "r3", at: at(6).Add(314 * time.Millisecond)}})
	want := []string{
		"tick 09:00:12 missed: SIGTERM of the leader r2 9ms after the tick; claimed by r2; its run on r2 started 6ms after the tick and failed: exit status 143 after 28ms",
		"tick 09:00:14 missed: SIGTERM of the leader r2 1.991s before the tick; no replica claimed it",
		"tick 09:00:13 ran 2 times, on r2, r3: SIGTERM of the leader r2 991ms before the tick; claimed by r3; its run on r3 started 5ms after the tick and succeeded after 20ms",
	}
	if strings.Join(r.broken, "\n") != strings.Join(want, "\n") {
		t.Fatalf("broken:\n%s\nwant:\n%s", strings.Join(r.broken, "\n"), strings.Join(want, "\n"))
	}
	cut := "Tick 09:00:16 ran and was cut short before it wrote its line: SIGTERM of the leader r3 314ms after the tick; claimed by r3; its run on r3 started 17ms after the tick and failed: exit status 143 after 1.504s."
	if !slices.Contains(r.notes, cut) {
		t.Errorf("notes:\n%s\nwant among them:\n%s", strings.Join(r.notes, "\n"), cut)
	}

	// The bench prints the report, and fails.
	fig := figure{name: "handover", summary: "a handover", run: func(context.Context, *harness) (*report, error) { return r, nil }}
	var stdout, stderr bytes.Buffer
	err := run(ctx, config{baton: "/bin/true"}, []figure{fig}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "handover") {
		t.Fatalf("the bench returned %v, want the handover figure failed", err)
	}
	if !strings.Contains(stdout.String(), "- "+want[0]) || !strings.Contains(stderr.String(), want[0]) {
		t.Errorf("the missed tick is not named:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

// TestALedgerGapIsReadOnceItsLineIsWritten: a tick whose command wrote its
// line after the next tick's is not a miss, and a tick never written is
// still one once the wait is over.
func TestALedgerGapIsReadOnceItsLineIsWritten(t *testing.T) {
	path := t.TempDir() + "/ledger"
	at := func(s int) string {
		return time.Date(2026, 3, 2, 9, 0, s, 0, time.UTC).Format(time.RFC3339) + " r1 1\n"
	}
	if err := os.WriteFile(path, []byte(at(10)+at(12)), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &ledger{path: path}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lines, err := l.settled(ctx, 100*time.Millisecond)
	if err != nil || len(tally(lines).missed) != 1 {
		t.Fatalf("a line never written: %d lines, missed %v, %v; want :11 missed", len(lines), tally(lines).missed, err)
	}

	done := make(chan []ledgerLine, 1)
	go func() {
		lines, err := l.settled(ctx, 20*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- lines
	}()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(at(11)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	select {
	case lines := <-done:
		if tl := tally(lines); len(tl.missed) != 0 || tl.ticks != 3 {
			t.Fatalf("after :11's line: %d ticks, missed %v; want 3, none", tl.ticks, tl.missed)
		}
	case <-ctx.Done():
		t.Fatal("the ledger was not read again within 30s")
	}
}
