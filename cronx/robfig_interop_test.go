package cronx_test

import (
	"bytes"
	"context"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	cron "github.com/robfig/cron/v3"
)

// A program's robfig/cron values go into a cronx.Cron as they are, and what
// cronx returns is robfig/cron's: a program that mixes the two packages
// during a migration compiles and behaves alike.
func TestRobfigValuesPassBothWays(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	var logger cron.Logger = cron.PrintfLogger(log.New(&out, "", 0))
	var parser cron.Parser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	var wrapper cron.JobWrapper = cron.Recover(logger)
	var schedule cron.Schedule = cron.Every(time.Minute)

	c := cronx.New(cronx.WithParser(parser), cronx.WithLogger(logger), cronx.WithChain(wrapper), cronx.WithLocation(time.UTC))
	var id cron.EntryID = c.Schedule(schedule, cron.FuncJob(func() { panic("disk full") }))
	specID, err := c.AddFunc("30 * * * * *", func() {}) // six fields: robfig's parser, not the standard one
	if err != nil {
		t.Fatalf("AddFunc with a robfig parser of six fields: %v", err)
	}

	e := c.Entry(id)
	var back cron.Schedule = e.Schedule
	if back != schedule {
		t.Errorf("Entry.Schedule = %v, want the program's own %v", back, schedule)
	}
	var wrapped cron.Job = e.WrappedJob
	wrapped.Run() // robfig's Recover, from the chain, catches the panic
	if got := out.String(); !strings.HasPrefix(got, "panic, error=disk full, stack=") {
		t.Errorf("robfig's Recover in the chain logged %q, want the panic", got)
	}
	var spec *cron.SpecSchedule = c.Entry(specID).Schedule.(*cron.SpecSchedule)
	if spec.Second != 1<<30 {
		t.Errorf("the seconds field parsed to %b, want second 30", spec.Second)
	}

	// And the other way: cronx's values in a robfig/cron Cron.
	var standard cron.Schedule
	if standard, err = cronx.ParseStandard("CRON_TZ=UTC 0 6 * * *"); err != nil {
		t.Fatal(err)
	}
	var every cron.ConstantDelaySchedule = cronx.Every(90 * time.Second)
	var chain cron.Chain = cronx.NewChain(cronx.Recover(cronx.DiscardLogger), cronx.SkipIfStillRunning(cronx.DiscardLogger))
	var cronxLogger cron.Logger = cronx.VerbosePrintfLogger(log.New(&out, "", 0))
	var cronxParser cron.Parser = cronx.NewParser(cronx.Minute | cronx.Hour | cronx.Dom | cronx.Month | cronx.Dow | cronx.Descriptor)
	r := cron.New(cron.WithParser(cronxParser), cron.WithLogger(cronxLogger), cron.WithChain(cronx.Recover(cronx.DefaultLogger)))
	r.Schedule(standard, chain.Then(cronx.FuncJob(func() {})))
	r.Schedule(every, cronx.ContextFunc(func(context.Context) error { return nil }))
	if _, err := r.AddFunc("@hourly", func() {}); err != nil {
		t.Fatalf("robfig's Cron with cronx's parser: %v", err)
	}
	if n := len(r.Entries()); n != 3 {
		t.Errorf("robfig's Cron has %d entries, want 3", n)
	}
	from := time.Date(2026, 1, 2, 5, 0, 0, 0, time.UTC)
	if got, want := standard.Next(from), from.Add(time.Hour); !got.Equal(want) {
		t.Errorf("ParseStandard's schedule: Next = %v, want %v", got, want)
	}
}
