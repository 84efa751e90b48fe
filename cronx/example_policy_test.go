package cronx_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/batonhq/baton/cronx"
	clientv3 "go.etcd.io/etcd/client/v3"
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

// A job that fails three nights in a row pauses itself on every replica,
// and Status says why until someone resumes it.
func ExampleWithPauseAfter() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	c := cronx.New(cronx.WithEtcd(client), cronx.WithName("reports"))
	report := cronx.ContextFunc(func(ctx context.Context) error {
		return errors.New("the warehouse is down")
	})
	if _, err := c.AddJob("0 3 * * *", cronx.Named("nightly-report", report, cronx.WithPauseAfter(3))); err != nil {
		log.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()

	st, err := c.Status(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range st.Jobs {
		if j.Paused && j.PausedReason != "" {
			log.Printf("%s paused by %s: %s; last success %v", j.Name, j.PausedBy, j.PausedReason, j.LastSuccess)
		}
	}
}

// An import that outlasts its hourly tick now and then: the tick that comes
// while it runs, on any replica, waits in etcd and runs as soon as it ends,
// with its own time as Info.Tick; while one waits, later ticks are dropped
// (cronx.ReasonBufferFull). cronx.BufferAll keeps up to 100 waiting.
func ExampleWithOverlap_bufferOne() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	c := cronx.New(cronx.WithEtcd(cli), cronx.WithName("imports"))
	imp := cronx.ContextFunc(func(ctx context.Context) error {
		info, _ := cronx.InfoFrom(ctx)
		log.Printf("import of the hour of %v", info.Tick)
		return nil
	})
	if _, err := c.AddJob("@hourly", cronx.Named("import", imp, cronx.WithOverlap(cronx.BufferOne))); err != nil {
		log.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
}

// A migration that runs once per deploy of the app, however many replicas
// the release starts, before the hourly job's first tick; the release is
// the app's version here (under Convox, RELEASE is read by default).
func ExampleWithRunAtStart() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	c := cronx.New(cronx.WithEtcd(client), cronx.WithName("app"), cronx.WithRelease("v1.4.2"))
	migrate := cronx.ContextFunc(func(ctx context.Context) error {
		info, _ := cronx.InfoFrom(ctx)
		log.Printf("migrating, on %s", info.Instance)
		return nil
	})
	if _, err := c.AddJob("@hourly", cronx.Named("migrate", migrate, cronx.WithRunAtStart(), cronx.WithOverlap(cronx.Forbid))); err != nil {
		log.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
}
