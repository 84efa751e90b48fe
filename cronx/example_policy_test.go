package cronx_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/batonhq/baton/cronx"
)

// Job policies hold for the whole cluster: every job of this Cron may run
// for ten minutes at most and starts up to thirty seconds after its tick;
// the nightly export replaces a run still going, is retried on failure, and
// runs once on the nights the clocks change.
func ExampleWithJobOptions() {
	c := cronx.New(cronx.WithJobOptions(cronx.WithTimeout(10*time.Minute), cronx.WithJitter(30*time.Second)))
	export := cronx.ContextFunc(func(ctx context.Context) error {
		info, _ := cronx.InfoFrom(ctx)
		log.Printf("export of %v, attempt %d", info.Tick, info.Attempt)
		<-ctx.Done() // a real export returns when its work is done
		if errors.Is(context.Cause(ctx), cronx.ErrReplaced) {
			log.Print("a later export took over")
		}
		return ctx.Err()
	})
	if _, err := c.AddJob("CRON_TZ=Europe/Berlin 30 2 * * *", cronx.Named("export", export,
		cronx.WithOverlap(cronx.Replace),
		cronx.WithTimeout(time.Hour), // over the Cron's ten minutes
		cronx.WithRetries(3, time.Minute),
		cronx.WithDST(cronx.DSTOnce),
	)); err != nil {
		log.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
}
