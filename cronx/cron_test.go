package cronx

import (
	"bytes"
	"context"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// t0 is a whole second, so that "@every 1s" ticks fall on t0+1s, t0+2s, ...
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// wait bounds how long a test waits, on the real clock, for the scheduler
// goroutine to react; it is only reached when a test fails.
const wait = 5 * time.Second

type firing struct {
	id   EntryID
	tick time.Time
}

// fakeCron is a Cron on a fake clock, with every tick given to fire recorded.
type fakeCron struct {
	*Cron
	clock *clock.Fake
	fired chan firing
}

func newFakeCron(t *testing.T, clk clock.Clock, fake *clock.Fake, opts ...Option) *fakeCron {
	t.Helper()
	opts = append([]Option{withClock(clk), WithLocation(time.UTC), WithLogger(DiscardLogger)}, opts...)
	fc := &fakeCron{Cron: New(opts...), clock: fake, fired: make(chan firing, 100)}
	fc.fireHook = func(e Entry, tick time.Time) { fc.fired <- firing{e.ID, tick} }
	t.Cleanup(func() {
		select {
		case <-fc.Stop().Done():
		case <-time.After(wait):
			t.Error("jobs still running after the test")
		}
	})
	return fc
}

// settle waits until the scheduler has handled every event so far and sleeps
// on a timer. A timer that fired is disarmed, so an armed one is the loop's
// next; the snapshot is served only once the loop has re-armed after an add
// or a remove that it received before.
func (fc *fakeCron) settle(t *testing.T) []Entry {
	t.Helper()
	if !fc.clock.WaitTimers(1, wait) {
		t.Fatal("the scheduler set no timer")
	}
	return fc.Entries()
}

// step lets the scheduler settle, then moves the fake clock to when its timer
// is due, and returns that time.
func (fc *fakeCron) step(t *testing.T) time.Time {
	t.Helper()
	fc.settle(t)
	due, _ := fc.clock.NextDue()
	fc.clock.Set(due)
	return due
}

func (fc *fakeCron) nextFiring(t *testing.T) firing {
	t.Helper()
	select {
	case f := <-fc.fired:
		return f
	case <-time.After(wait):
		t.Fatal("no job was fired")
		return firing{}
	}
}

func receive(t *testing.T, ch <-chan time.Time, what string) time.Time {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("%s did not happen", what)
		return time.Time{}
	}
}

func TestEveryFiresAtEachNominalSecond(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake)
	ran := make(chan time.Time, 10)
	id, err := c.AddFunc("@every 1s", func() { ran <- fake.Now() })
	if err != nil {
		t.Fatal(err)
	}
	c.Start()

	for i := 1; i <= 5; i++ {
		want := t0.Add(time.Duration(i) * time.Second)
		if due := c.step(t); !due.Equal(want) {
			t.Fatalf("run %d: scheduler woke at %v, want %v", i, due, want)
		}
		if f := c.nextFiring(t); f.id != id || !f.tick.Equal(want) {
			t.Fatalf("run %d: fired entry %d for tick %v, want entry %d for %v", i, f.id, f.tick, id, want)
		}
		if at := receive(t, ran, "the run"); !at.Equal(want) {
			t.Fatalf("run %d: job ran at %v, want %v", i, at, want)
		}
		e := c.settle(t)[0]
		if !e.Prev.Equal(want) || !e.Next.Equal(want.Add(time.Second)) {
			t.Fatalf("run %d: entry has Prev %v, Next %v; want %v, %v", i, e.Prev, e.Next, want, want.Add(time.Second))
		}
	}
}

// lateClock delivers every timer lag after it was asked for, as a loaded
// machine or a paused process does, so that the scheduler wakes up after the
// tick it slept for.
type lateClock struct {
	*clock.Fake
	lag time.Duration
}

func (l lateClock) NewTimer(d time.Duration) clock.Timer { return l.Fake.NewTimer(d + l.lag) }

func TestFireGetsNominalTickWhenWakingLate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		opts []Option
	}{
		{"@every 1s", nil},
		{"* * * * * *", []Option{WithSeconds()}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			fake := clock.NewFake(t0)
			const lag = 300 * time.Millisecond
			c := newFakeCron(t, lateClock{fake, lag}, fake, tt.opts...)
			if _, err := c.AddFunc(tt.spec, func() {}); err != nil {
				t.Fatal(err)
			}
			c.Start()
			for i := 1; i <= 3; i++ {
				tick := t0.Add(time.Duration(i) * time.Second)
				if woke := c.step(t); !woke.Equal(tick.Add(lag)) {
					t.Fatalf("run %d: woke at %v, want %v", i, woke, tick.Add(lag))
				}
				if f := c.nextFiring(t); !f.tick.Equal(tick) {
					t.Fatalf("run %d: fire got tick %v, want the nominal %v", i, f.tick, tick)
				}
			}
		})
	}
}

// A scheduler that wakes up after several ticks of an entry runs it once, for
// the first tick it missed, and schedules the next from the wake-up time, as
// robfig/cron does: missed ticks are not made up.
func TestLateWakeRunsOnce(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	c := newFakeCron(t, lateClock{fake, 2500 * time.Millisecond}, fake)
	if _, err := c.AddFunc("@every 1s", func() {}); err != nil {
		t.Fatal(err)
	}
	c.Start()
	c.step(t)
	if f := c.nextFiring(t); !f.tick.Equal(t0.Add(time.Second)) {
		t.Fatalf("fired tick %v, want %v", f.tick, t0.Add(time.Second))
	}
	e := c.settle(t)[0]
	if want := t0.Add(4 * time.Second); !e.Next.Equal(want) {
		t.Fatalf("Next = %v after waking at t0+3.5s, want %v", e.Next, want)
	}
	select {
	case f := <-c.fired:
		t.Fatalf("missed tick %v was made up", f.tick)
	default:
	}
}

func TestEntries(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0) // 09:00
	c := newFakeCron(t, fake, fake)
	never, _ := c.AddFunc("0 0 30 2 *", func() {}) // February 30th
	daily, _ := c.AddFunc("0 10 * * *", func() {})
	minutely := c.Schedule(Every(time.Minute), FuncJob(func() {}))

	before := c.Entries()
	if len(before) != 3 || before[0].ID != never || before[1].ID != daily || before[2].ID != minutely {
		t.Fatalf("before Start, Entries = %v, want the entries in the order added", before)
	}
	for _, e := range before {
		if !e.Next.IsZero() || !e.Prev.IsZero() {
			t.Errorf("before Start, entry %d has Next %v, Prev %v; want zero times", e.ID, e.Next, e.Prev)
		}
	}
	if e := c.Entry(daily); !e.Valid() || e.ID != daily {
		t.Errorf("Entry(%d) = %+v", daily, e)
	}
	if e := c.Entry(999); e.Valid() {
		t.Errorf("Entry(999) = %+v, want the zero Entry", e)
	}

	c.Start()
	got := c.settle(t)
	want := []struct {
		id   EntryID
		next time.Time
	}{
		{minutely, t0.Add(time.Minute)},
		{daily, t0.Add(time.Hour)},
		{never, time.Time{}},
	}
	if len(got) != len(want) {
		t.Fatalf("Entries = %v, want %d entries", got, len(want))
	}
	for i, w := range want {
		if got[i].ID != w.id || !got[i].Next.Equal(w.next) {
			t.Errorf("Entries()[%d] = entry %d next %v, want entry %d next %v", i, got[i].ID, got[i].Next, w.id, w.next)
		}
	}
	if c.Location() != time.UTC {
		t.Errorf("Location = %v, want UTC", c.Location())
	}
}

func TestAddWhileRunning(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake)
	c.Start()
	if !fake.WaitTimers(1, wait) {
		t.Fatal("the scheduler set no timer")
	}
	fake.Advance(3 * time.Second)
	id := c.Schedule(Every(10*time.Second), FuncJob(func() {}))
	if due := c.step(t); !due.Equal(t0.Add(13 * time.Second)) {
		t.Fatalf("an entry added at t0+3s first ran at %v, want t0+13s", due)
	}
	if f := c.nextFiring(t); f.id != id {
		t.Fatalf("fired entry %d, want %d", f.id, id)
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake)
	removedEarly, _ := c.AddFunc("@every 1s", func() {})
	kept, _ := c.AddFunc("@every 1s", func() {})
	removedLate, _ := c.AddFunc("@every 1s", func() {})
	c.Remove(removedEarly)
	c.Start()
	c.Remove(removedLate)
	c.Remove(999) // unknown: ignored

	c.step(t)
	if f := c.nextFiring(t); f.id != kept {
		t.Fatalf("fired entry %d, want only %d", f.id, kept)
	}
	if entries := c.settle(t); len(entries) != 1 || entries[0].ID != kept {
		t.Fatalf("Entries = %v, want only entry %d", entries, kept)
	}
	select {
	case f := <-c.fired:
		t.Fatalf("removed entry %d fired", f.id)
	default:
	}
}

func TestStopWaitsForRunningJobs(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake)
	if ctx := c.Stop(); ctx.Err() == nil {
		t.Fatal("Stop of a Cron that never ran returned a context that is not done")
	}

	started := make(chan time.Time, 1)
	release := make(chan struct{})
	if _, err := c.AddFunc("@every 1s", func() { started <- fake.Now(); <-release }); err != nil {
		t.Fatal(err)
	}
	c.Start()
	c.step(t)
	c.nextFiring(t)
	receive(t, started, "the run")

	ctx := c.Stop()
	if ctx.Err() != nil {
		t.Fatal("Stop's context is done while a job runs")
	}
	// No run starts after Stop: the scheduler lets go of its timer, and time
	// passing fires nothing.
	for deadline := time.Now().Add(wait); fake.Timers() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stopped scheduler keeps its timer")
		}
	}
	fake.Advance(time.Minute)
	if len(c.fired) != 0 {
		t.Fatal("a job fired after Stop")
	}
	close(release)
	select {
	case <-ctx.Done():
	case <-time.After(wait):
		t.Fatal("Stop's context is not done after the job returned")
	}
	if ctx := c.Stop(); ctx.Err() == nil {
		t.Fatal("a second Stop with no job running returned a context that is not done")
	}
}

func TestRunBlocksUntilStop(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake)
	returned := make(chan struct{})
	go func() {
		c.Run()
		close(returned)
	}()
	if !fake.WaitTimers(1, wait) {
		t.Fatal("the scheduler set no timer")
	}
	c.Start() // a no-op while Run runs
	select {
	case <-returned:
		t.Fatal("Run returned before Stop")
	default:
	}
	c.Stop()
	select {
	case <-returned:
	case <-time.After(wait):
		t.Fatal("Run did not return after Stop")
	}
}

// lockedBuffer is a log sink that the scheduler and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The verbose log has robfig/cron's messages and keys, so that log queries
// written for it keep working.
func TestVerboseLog(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake, WithLogger(VerbosePrintfLogger(log.New(&out, "", 0))))
	id, _ := c.AddFunc("@every 1s", func() {})
	c.Start()
	c.step(t)
	c.nextFiring(t)
	c.settle(t)
	c.Remove(id)
	c.Stop()

	want := strings.Join([]string{
		"start",
		"schedule, now=2026-03-02T09:00:00Z, entry=1, next=2026-03-02T09:00:01Z",
		"wake, now=2026-03-02T09:00:01Z",
		"run, now=2026-03-02T09:00:01Z, entry=1, next=2026-03-02T09:00:02Z",
		"removed, entry=1",
		"stop",
	}, "\n") + "\n"
	if got := out.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}

func TestRecoverLogsPanic(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	job := NewChain(Recover(PrintfLogger(log.New(&out, "", 0)))).Then(FuncJob(func() { panic("disk full") }))
	job.Run()
	if got := out.String(); !strings.HasPrefix(got, "panic, error=disk full, stack=...\n") {
		t.Errorf("log = %q, want the panic with its stack", got)
	}
}

// shutdown ends c as a test ends: a second for its runs to return, then
// their contexts are cancelled, and every run must have returned within
// 15 s.
func shutdown(t *testing.T, c *Cron, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Shutdown(ctx) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Errorf("%s: runs still going 15s after Shutdown", id)
	}
}
