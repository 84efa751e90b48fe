package statuspage_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/statuspage"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// An application mounts the page on its own server, here under /baton/.
func ExampleNew() {
	cfg, err := election.ConnectionFromEnv().ClientConfig() // BATON_ETCD_ENDPOINTS, TLS, auth
	if err != nil {
		log.Fatal(err)
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	page, err := statuspage.New(client, "", statuspage.WithRefresh(10*time.Second)) // BATON_PREFIX, else /baton
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /baton/", http.StripPrefix("/baton", page))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}

// Read gives the same snapshot as data, for a report of one's own.
func ExampleRead() {
	cfg, err := election.ConnectionFromEnv().ClientConfig()
	if err != nil {
		log.Fatal(err)
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snap, err := statuspage.Read(ctx, client, "", "", time.Now())
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range snap.Schedulers {
		for _, j := range s.Jobs {
			for _, c := range j.NotRunByReason() {
				log.Printf("%s/%s: %d ticks not run over the last day: %s", s.Name, j.Name, c.Count, c.Reason)
			}
		}
	}
}
