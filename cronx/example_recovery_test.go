package cronx_test

import (
	"context"
	"log"

	"github.com/batonhq/baton/cronx"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A nightly import that takes an hour runs again on another replica when
// the one running it dies mid-run, at most twice a night. The run again
// knows it is one (Info.Recovered), and its fence is later than the lost
// run's, so a write fenced by the lost run fails.
func ExampleWithRecovery() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	c := cronx.New(cronx.WithEtcd(client), cronx.WithName("imports"))
	load := cronx.ContextFunc(func(ctx context.Context) error {
		info, _ := cronx.InfoFrom(ctx)
		if info.Recovered > 0 {
			log.Printf("import of %v again (%d), its last runner lost: resume from the checkpoint", info.Tick, info.Recovered)
		}
		return nil // the import, fenced by info.Fence
	})
	if _, err := c.AddJob("0 2 * * *", cronx.Named("nightly-import", load, cronx.WithRecovery(2))); err != nil {
		log.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
}
