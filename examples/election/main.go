// Command election shows baton's leader election: three
// candidates in one process, a graceful handover (the leader resigns) and a
// crash failover (the leader vanishes without resigning and its lease must
// expire). It prints who leads and how long each change took, then exits.
// It uses the etcd that BATON_ETCD_ENDPOINTS names, or else starts a
// one-member `baton etcd` of its own on loopback.
//
//	go run ./examples/election
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	fmt.Printf("etcd at %s; three candidates, lease TTL %v\n\n", endpoint, ttl)

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
	conn := election.ConnectionFromEnv() // auth and TLS from BATON_ETCD_*
	conn.Endpoints = strings.Split(endpoint, ",")
	cfg, err := conn.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Logger = zap.NewNop()
	cli, err := clientv3.New(cfg)
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

// startEtcd returns the etcd to use: BATON_ETCD_ENDPOINTS when it is set,
// else a one-member `baton etcd` started on free loopback ports, built from
// this module.
func startEtcd() (string, func(), error) {
	if eps := os.Getenv("BATON_ETCD_ENDPOINTS"); eps != "" {
		return eps, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "baton-example-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	baton := filepath.Join(dir, "baton")
	build := exec.Command("go", "build", "-o", baton, "github.com/batonhq/baton/convox/cmd/baton")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build baton: %w", err)
	}
	client, peer, err := freeURLs()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	etcd := exec.Command(baton, "etcd", "--name", "example", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer)
	var etcdLog strings.Builder // shown only if etcd fails
	etcd.Stdout, etcd.Stderr = &etcdLog, &etcdLog
	if err := etcd.Start(); err != nil {
		cleanup()
		return "", nil, err
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = etcd.Process.Signal(syscall.SIGTERM)
			_ = etcd.Wait()
			cleanup()
		})
	}
	if err := waitHealthy(client + "/health"); err != nil {
		stop()
		return "", nil, fmt.Errorf("%w\n%s", err, etcdLog.String())
	}
	return client, stop, nil
}

func waitHealthy(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd at %s not healthy: %v", url, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freeURLs() (client, peer string, err error) {
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", err
		}
		defer l.Close()
		addrs = append(addrs, "http://"+l.Addr().String())
	}
	return addrs[0], addrs[1], nil
}
