package cronx

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAlive: a Cron is alive while it runs, says it is not before Start
// and after Stop, and a loop that does not turn fails the check within
// its deadline instead of hanging it.
func TestAlive(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := New()
	if err := c.Alive(ctx); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Alive before Start: %v, want ErrNotRunning", err)
	}
	c.Start()
	if err := c.Alive(ctx); err != nil {
		t.Errorf("Alive while running: %v", err)
	}
	<-c.Stop().Done()
	if err := c.Alive(ctx); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Alive after Stop: %v, want ErrNotRunning", err)
	}

	// A loop held inside a job's start: fire runs on the loop.
	stuck := New()
	release := make(chan struct{})
	fired := make(chan struct{})
	stuck.fireHook = func(Entry, time.Time) {
		close(fired)
		<-release
	}
	stuck.Schedule(Every(time.Second), FuncJob(func() {}))
	stuck.Start()
	defer func() { close(release); stuck.Stop() }()
	<-fired
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if err := stuck.Alive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Alive of a stuck loop: %v, want the deadline exceeded", err)
	}
}

// BenchmarkAliveTenThousandJobs is the cost of one health check of a
// scheduler of ten thousand jobs: a turn of the loop and a copy of the
// entries.
func BenchmarkAliveTenThousandJobs(b *testing.B) {
	c := New()
	for range 10000 {
		c.Schedule(Every(time.Hour), FuncJob(func() {}))
	}
	c.Start()
	defer c.Stop()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Alive(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
