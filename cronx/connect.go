package cronx

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ErrEtcdUnreachable means a coordinated Cron has not reached etcd: it keeps
// trying, and runs no job until it does.
var ErrEtcdUnreachable = errors.New("cronx: etcd unreachable")

// connect makes the etcd client from the environment when the Cron has
// none, and reports whether it made one. An etcd that does not answer (a
// client with credentials must log in as it connects) is tried again, with
// backoff, until it answers or ctx ends; each failure is logged, the first
// and then each different one, and Status reports it.
func (co *coordinator) connect(ctx context.Context, gen int) bool {
	if !co.ownsClient {
		return false
	}
	cfg, err := co.conn.ClientConfig()
	if err != nil {
		// A configuration error does not heal by waiting.
		co.setConnErr(err)
		co.logger.Error(err, "cronx: cannot reach etcd; no job will run", "scheduler", co.name)
		return false
	}
	cfg.Logger = zap.NewNop()
	backoff, logged := connectBackoff, ""
	for attempt := 1; ; attempt++ {
		cli, err := co.dial(ctx, cfg)
		if err == nil {
			co.mu.Lock()
			co.client, co.clientGen, co.connErr = cli, gen, nil
			co.mu.Unlock()
			if attempt > 1 {
				co.logger.Info("cronx: reached etcd; scheduling", "scheduler", co.name, "attempts", attempt)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if msg := err.Error(); msg != logged {
			logged = msg
			co.logger.Error(err, "cronx: cannot reach etcd; no job runs until it answers; retrying",
				"scheduler", co.name, "attempt", attempt)
		}
		co.setConnErr(err)
		sleep(ctx, backoff) // etcd answers on real time, whatever the Cron's clock
		backoff = min(2*backoff, maxConnectBackoff)
	}
}

// dial makes a client, giving up when ctx ends; a client made after that is
// closed in the background.
func (co *coordinator) dial(ctx context.Context, cfg clientv3.Config) (*clientv3.Client, error) {
	type made struct {
		cli *clientv3.Client
		err error
	}
	ch := make(chan made, 1)
	co.runs.add() // waited for before the Cron's coordination ends
	go func() {
		cli, err := clientv3.New(cfg)
		ch <- made{cli, err}
		co.runs.done()
	}()
	select {
	case m := <-ch:
		return m.cli, m.err
	case <-ctx.Done():
		co.runs.add()
		go func() {
			defer co.runs.done()
			if m := <-ch; m.cli != nil {
				m.cli.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

func (co *coordinator) setConnErr(err error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.connErr = err
}

// controlClient returns a client for a cluster operation, and a func to
// call when the operation is done. A Cron that makes its client from the
// environment lends its own while it runs and has reached etcd; before
// Start, after Stop, and while the first connection is under way, the
// operation gets a client of its own, dialled under ctx. While Start's
// connection attempts fail, it is ErrEtcdUnreachable.
func (co *coordinator) controlClient(ctx context.Context) (*clientv3.Client, func(), error) {
	co.mu.Lock()
	cli, live, connErr := co.client, co.started && co.clientGen == co.gen, co.connErr
	if co.started && co.ownsClient && cli == nil && connErr != nil {
		co.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: %v", ErrEtcdUnreachable, connErr)
	}
	co.mu.Unlock()
	if !co.ownsClient || cli != nil && live {
		return cli, func() {}, nil
	}
	cfg, err := co.conn.ClientConfig()
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
