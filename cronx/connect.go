package cronx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/election"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ErrEtcdUnreachable means a coordinated Cron has not reached etcd: it keeps
// trying, and runs no job until it does.
var ErrEtcdUnreachable = errors.New("cronx: etcd unreachable")

// connection is the coordinator's etcd client: the one given to New, or one
// it makes from the environment at each Start and closes after Stop. Its
// mutex guards the client and the state of the connection attempts.
type connection struct {
	sc   *scope
	work *jobWaiter          // the coordinator's: what the client must outlive
	owns bool                // the client is made from the environment
	env  election.Connection // the environment's, when owns

	mu     sync.Mutex
	client *clientv3.Client
	gen    int   // counts Starts
	made   int   // the Start that made client, when owns
	live   bool  // a Start is under way: between begin and retire
	err    error // why the last connection attempt failed
}

// etcd returns the client, nil until one is made from the environment.
func (cn *connection) etcd() *clientv3.Client {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.client
}

// begin marks a Start, and returns its number for connect.
func (cn *connection) begin() int {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.gen++
	cn.live = true
	return cn.gen
}

// retire marks the Start over: from now on a cluster operation dials a
// client of its own (controlClient).
func (cn *connection) retire() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.live = false
}

// closeMade closes the client connect made, once nothing uses it.
func (cn *connection) closeMade() {
	cn.mu.Lock()
	cli := cn.client
	cn.client = nil
	cn.mu.Unlock()
	cli.Close()
}

// connect makes the etcd client from the environment when the Cron has
// none, and reports whether it made one. An etcd that does not answer (a
// client with credentials must log in as it connects) is tried again, with
// backoff, until it answers or ctx ends; each failure is logged, the first
// and then each different one, and Status reports it.
func (cn *connection) connect(ctx context.Context, gen int) bool {
	if !cn.owns {
		return false
	}
	cfg, err := cn.env.ClientConfig()
	if err != nil {
		// A configuration error does not heal by waiting.
		cn.setErr(err)
		cn.sc.logger.Error(err, "cronx: cannot reach etcd; no job will run", "scheduler", cn.sc.name)
		return false
	}
	cfg.Logger = zap.NewNop()
	backoff, logged := connectBackoff, ""
	for attempt := 1; ; attempt++ {
		cli, err := cn.dial(ctx, cfg)
		if err == nil {
			err = cn.probe(ctx, cli, cfg.DialTimeout)
		}
		if err == nil {
			cn.mu.Lock()
			cn.client, cn.made, cn.err = cli, gen, nil
			cn.mu.Unlock()
			if attempt > 1 {
				cn.sc.logger.Info("cronx: reached etcd; scheduling", "scheduler", cn.sc.name, "attempts", attempt)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if msg := err.Error(); msg != logged {
			logged = msg
			cn.sc.logger.Error(err, "cronx: cannot reach etcd; no job runs until it answers; retrying",
				"scheduler", cn.sc.name, "attempt", attempt)
		}
		cn.setErr(err)
		sleep(ctx, backoff) // etcd answers on real time, whatever the Cron's clock
		backoff = min(2*backoff, maxConnectBackoff)
	}
}

// probe asks etcd, through cli, for one read of the scheduler's keys,
// within d, and closes cli if it does not answer: a client is made without
// a word to etcd, so an endpoint that nobody answers (a wrong address, a
// firewall) would otherwise be heard of only by each claim that failed,
// silently. An answer that refuses the read is an answer.
func (cn *connection) probe(ctx context.Context, cli *clientv3.Client, d time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err := cli.Get(pctx, writes{cn.sc}.dir(), clientv3.WithCountOnly(), clientv3.WithLimit(1)) // mutation:connect-probe
	var answered rpctypes.EtcdError
	if err == nil || errors.As(err, &answered) {
		return nil
	}
	cli.Close()
	return fmt.Errorf("%w: no answer from %s within %v (%v)", ErrEtcdUnreachable, strings.Join(cli.Endpoints(), ","), d, err)
}

// dial makes a client, giving up when ctx ends; a client made after that is
// closed in the background.
func (cn *connection) dial(ctx context.Context, cfg clientv3.Config) (*clientv3.Client, error) {
	type made struct {
		cli *clientv3.Client
		err error
	}
	ch := make(chan made, 1)
	cn.work.add() // waited for before the Cron's coordination ends
	go func() {
		cli, err := clientv3.New(cfg)
		ch <- made{cli, err}
		cn.work.done()
	}()
	select {
	case m := <-ch:
		return m.cli, m.err
	case <-ctx.Done():
		cn.work.add()
		go func() {
			defer cn.work.done()
			if m := <-ch; m.cli != nil {
				m.cli.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

func (cn *connection) setErr(err error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.err = err
}

// controlClient returns a client for a cluster operation, and a func to
// call when the operation is done. A Cron that makes its client from the
// environment lends its own while it runs and has reached etcd; before
// Start, after Stop, and while the first connection is under way, the
// operation gets a client of its own, dialled under ctx. While Start's
// connection attempts fail, it is ErrEtcdUnreachable.
func (cn *connection) controlClient(ctx context.Context) (*clientv3.Client, func(), error) {
	cn.mu.Lock()
	cli, live, connErr := cn.client, cn.live && cn.made == cn.gen, cn.err
	if cn.live && cn.owns && cli == nil && connErr != nil {
		cn.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: %v", ErrEtcdUnreachable, connErr)
	}
	cn.mu.Unlock()
	if !cn.owns || cli != nil && live {
		return cli, func() {}, nil
	}
	cfg, err := cn.env.ClientConfig()
	if err != nil {
		return nil, nil, err
	}
	cfg.Logger = zap.NewNop()
	cfg.Context = ctx
	cli, err = clientv3.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrEtcdUnreachable, err)
	}
	return cli, func() { cli.Close() }, nil
}
