// Command election shows baton's leader election on an embedded etcd: three
// candidates in one process, a graceful handover (the leader resigns) and a
// crash failover (the leader vanishes without resigning and its lease must
// expire). It prints who leads and how long each change took, then exits.
//
//	go run ./examples/election
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

const ttl = 3 * time.Second

// replica is one candidate with its own etcd client, as each replica of an
// app behind a load balancer would have.
type replica struct {
	id     string
	client *clientv3.Client
	cancel context.CancelFunc
	done   chan struct{}
}

type event struct {
	id   string
	term election.Term
	at   time.Time
}

func main() {
	log.SetFlags(0)
	endpoint, stopEtcd, err := startEtcd()
	if err != nil {
		log.Fatalf("embedded etcd: %v", err)
	}
	defer stopEtcd()
	fmt.Printf("embedded etcd at %s; three candidates, lease TTL %v\n\n", endpoint, ttl)

	start := time.Now()
	elected := make(chan event, 8)
	replicas := map[string]*replica{}
	for _, id := range []string{"replica-1", "replica-2", "replica-3"} {
		r, err := startReplica(endpoint, id, elected)
		if err != nil {
			log.Fatal(err)
		}
		replicas[id] = r
	}
	defer func() {
		for _, r := range replicas {
			r.stop()
		}
	}()

	first := <-elected
	fmt.Printf("%6.3fs  %s is leader (fencing token %d)\n", since(start), first.id, first.term.Revision)

	// Graceful handover: the leader stops, as on SIGTERM during a deploy.
	t0 := time.Now()
	fmt.Printf("%6.3fs  %s stops gracefully and resigns\n", since(start), first.id)
	replicas[first.id].stop()
	delete(replicas, first.id)
	second := <-elected
	fmt.Printf("%6.3fs  %s is leader (fencing token %d), %v after the resignation\n",
		since(start), second.id, second.term.Revision, second.at.Sub(t0).Round(time.Microsecond))

	// Crash failover: the leader's connection to etcd vanishes without a
	// resignation; its lease expires after the TTL.
	t1 := time.Now()
	fmt.Printf("%6.3fs  %s crashes (no resignation)\n", since(start), second.id)
	crashed := replicas[second.id]
	crashed.crash()
	delete(replicas, second.id)
	third := <-elected
	fmt.Printf("%6.3fs  %s is leader (fencing token %d), %v after the crash (TTL %v)\n",
		since(start), third.id, third.term.Revision, third.at.Sub(t1).Round(time.Millisecond), ttl)
	<-crashed.done

	fmt.Printf("\nhandover %v, failover %v; one leader at a time, fencing tokens %d < %d < %d\n",
		second.at.Sub(t0).Round(time.Microsecond), third.at.Sub(t1).Round(time.Millisecond),
		first.term.Revision, second.term.Revision, third.term.Revision)
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }

func startReplica(endpoint, id string, elected chan<- event) (*replica, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, err
	}
	e, err := election.New(cli, "example", election.WithIdentity(id), election.WithTTL(ttl))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{id: id, client: cli, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		e.Run(ctx, func(ctx context.Context, term election.Term) {
			elected <- event{id: id, term: term, at: time.Now()}
			<-ctx.Done() // lead until the term ends
		})
	}()
	return r, nil
}

// stop ends the candidate gracefully: Run resigns before it returns.
func (r *replica) stop() {
	r.cancel()
	<-r.done
	r.client.Close()
}

// crash closes the connection first, so the resignation cannot reach etcd,
// and stops the candidate without waiting for it.
func (r *replica) crash() {
	r.client.Close()
	r.cancel()
}

// startEtcd runs a one-member etcd in this process on a free loopback port.
func startEtcd() (string, func(), error) {
	dir, err := os.MkdirTemp("", "baton-example")
	if err != nil {
		return "", nil, err
	}
	client, peer, err := freeURLs()
	if err != nil {
		return "", nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return "", nil, fmt.Errorf("not ready within 30s")
	}
	var once sync.Once
	return client.String(), func() {
		once.Do(func() {
			e.Close()
			os.RemoveAll(dir)
		})
	}, nil
}

func freeURLs() (client, peer url.URL, err error) {
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return url.URL{}, url.URL{}, err
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return url.URL{Scheme: "http", Host: addrs[0]}, url.URL{Scheme: "http", Host: addrs[1]}, nil
}
