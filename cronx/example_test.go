package cronx_test

import (
	"fmt"
	"log"
	"time"

	"github.com/batonhq/baton/cronx"
)

// A program written for robfig/cron changes only its import path.
func Example() {
	c := cronx.New()
	if _, err := c.AddFunc("30 * * * *", func() { fmt.Println("every hour on the half hour") }); err != nil {
		log.Fatal(err)
	}
	if _, err := c.AddFunc("CRON_TZ=Asia/Tokyo 30 4 * * *", func() { fmt.Println("04:30 in Tokyo") }); err != nil {
		log.Fatal(err)
	}
	if _, err := c.AddFunc("@every 1h30m", func() { fmt.Println("every hour and a half") }); err != nil {
		log.Fatal(err)
	}
	c.Start()

	// ... the program runs; jobs run in their own goroutines ...

	// Stop scheduling, then give running jobs up to 30 seconds to finish.
	select {
	case <-c.Stop().Done():
	case <-time.After(30 * time.Second):
	}
}

// Jobs that must not overlap, and must not take the program down when they
// panic, get wrappers.
func ExampleWithChain() {
	logger := cronx.DefaultLogger
	c := cronx.New(cronx.WithChain(
		cronx.Recover(logger),
		cronx.SkipIfStillRunning(logger),
	))
	if _, err := c.AddFunc("*/5 * * * *", func() { /* a job that may take long */ }); err != nil {
		log.Fatal(err)
	}
	c.Start()
	defer c.Stop()
}

func ExampleParseStandard() {
	schedule, err := cronx.ParseStandard("30 4 * * mon-fri")
	if err != nil {
		log.Fatal(err)
	}
	t := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC) // a Friday
	for range 3 {
		t = schedule.Next(t)
		fmt.Println(t.Format("Mon Jan 2 15:04"))
	}

	_, err = cronx.ParseStandard("30 4 * *")
	fmt.Println(err)
	// Output:
	// Mon Jan 5 04:30
	// Tue Jan 6 04:30
	// Wed Jan 7 04:30
	// expected exactly 5 fields, found 4: [30 4 * *]
}

// An observer that logs each tick not run, with its reason, and each failed
// run. Its callbacks run on a goroutine of their own, never the scheduler's.
func ExampleWithObserver() {
	c := cronx.New(cronx.WithObserver(cronx.Observer{
		OnTickNotRun: func(e cronx.TickNotRun) {
			log.Printf("%s: tick %s of %s not run: %s", e.Scheduler, e.Tick.Format(time.RFC3339), e.Job, e.Reason)
		},
		OnRunEnded: func(e cronx.RunEnded) {
			if e.Outcome == cronx.Failed {
				log.Printf("%s: run of %s failed after %v: %v", e.Scheduler, e.Job, e.Duration, e.Err)
			}
		},
	}))
	c.AddFunc("@hourly", func() {})
	c.Start()
	defer c.Stop()
}
