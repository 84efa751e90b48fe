package cronx_test

import (
	"context"
	"log"
	"time"

	"github.com/batonhq/baton/cronx"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A week of an hourly job lost to a bug runs again, each tick once in the
// cluster, however many replicas ask: the job tells a backfilled run by
// Info.Backfill, and Status shows how far the backfill has come.
func ExampleCron_Backfill() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	c := cronx.New(cronx.WithEtcd(client), cronx.WithName("billing"))
	invoice := cronx.ContextFunc(func(ctx context.Context) error {
		info, _ := cronx.InfoFrom(ctx)
		log.Printf("invoices of the hour before %v (backfill: %v)", info.Tick, info.Backfill)
		return nil
	})
	if _, err := c.AddJob("0 * * * *", cronx.Named("invoice", invoice, cronx.WithOverlap(cronx.Forbid))); err != nil {
		log.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()

	ctx := context.Background()
	to := time.Now().Truncate(time.Hour)
	b, err := c.Backfill(ctx, "invoice", to.Add(-7*24*time.Hour), to, 0) // 168 ticks, under the default cap
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("%d ticks queued (asked before: %v)", b.Ticks, b.Existing)

	st, err := c.Status(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range st.Jobs {
		for _, b := range j.Backfills {
			if b.Pending() {
				log.Printf("%s: %d of %d ticks run", j.Name, b.Done, b.Ticks)
			}
		}
	}
}
