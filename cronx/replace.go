package cronx

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrReplaced is the cause of the context of a run of a Replace job that a
// later tick replaced: context.Cause(ctx) returns it once the later tick
// has been claimed.
var ErrReplaced = errors.New("cronx: run replaced by a later tick")

// A Replace job's run, of a tick or a trigger, is claimed without the
// Forbid check, beside the run in progress, whose marker (running/<seq>)
// says who runs it. Each run of the job watches the job's claim keys (last
// for ticks, triggered for triggers) from its own claim on: a later claim
// there cancels the run, wherever it runs, with ErrReplaced. The new run
// starts only once no other marker of the job is left, that is, once the
// run before has returned and released its marker, or its replica's lease
// has expired; so two runs never overlap. A run still waiting when an even
// later one is claimed gives way to it without starting.
//
// A write of a claim key after a run's claim is always a later claim: a
// claim never writes a lower sequence, and a claim given back (claim.go)
// writes the key only while it holds the claim it gives back, which was
// then made after the run's.

// replacing is the replace step of a run's life: it has r's context
// cancelled with ErrReplaced by a later claim of the job, and waits until
// every earlier run of the job has ended. It returns a func that stops the
// watch, and why r must not start, if so: ErrReplaced when a later run was
// claimed first, else the cause of r's end (Stop, Remove, its claim's
// session lost).
func replacing(r *run, c held) (release func(), why error) {
	wctx, stopWatch := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchLaterClaim(wctx, r, c.claim.Revision, func() { r.cancel(ErrReplaced) }) // mutation:replace-cancel
	}()
	release = func() {
		stopWatch()
		<-done
	}
	if err := awaitEarlierRuns(r, c.claim.Fence.Key); err != nil {
		return release, err
	}
	return release, nil
}

// watchLaterClaim calls replaced once one of the job's claim keys is
// written after rev, or returns when ctx ends. A watch that etcd ends
// (compacted past its revision, or lost) is followed by a read of the keys
// and new watches from that read.
func watchLaterClaim(ctx context.Context, r *run, rev int64, replaced func()) {
	co := r.co
	cli := co.conn.etcd()
	keys := co.writes.claimKeys(r.job.name)
	from := rev + 1
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		later := make(chan bool, len(keys))
		for _, key := range keys {
			go func() {
				for wr := range cli.Watch(wctx, key, clientv3.WithRev(from)) {
					if len(wr.Events) > 0 {
						later <- true
						return
					}
					if err := wr.Err(); err != nil && wctx.Err() == nil {
						co.logger.Info("cronx: watch for a later run ended; reading the claims", "job", r.job.name, "tick", r.tick, "err", err)
					}
				}
				later <- false
			}()
		}
		seen := <-later
		cancel()
		if seen {
			replaced()
			return
		}
		resp, err := cli.Txn(ctx).Then(clientv3.OpGet(keys[0]), clientv3.OpGet(keys[1])).Commit()
		if err != nil {
			sleep(ctx, retryBackoff)
			continue
		}
		for _, op := range resp.Responses {
			if kvs := op.GetResponseRange().Kvs; len(kvs) > 0 && kvs[0].ModRevision > rev {
				replaced()
				return
			}
		}
		from = resp.Header.Revision + 1
	}
}

// replacedError is the error recorded for a run whose context ctx was
// cancelled by a later tick: ErrReplaced unless the run failed otherwise.
func replacedError(ctx context.Context, err error) error {
	if !errors.Is(context.Cause(ctx), ErrReplaced) {
		return err
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrReplaced) {
		return ErrReplaced
	}
	return fmt.Errorf("%w: %w", ErrReplaced, err)
}

// awaitEarlierRuns waits until the job has no in-progress marker but own,
// or r's context ends.
func awaitEarlierRuns(r *run, own string) error {
	co, ctx := r.co, r.ctx
	cli := co.conn.etcd()
	prefix := co.writes.running(r.job.name)
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			sleep(ctx, retryBackoff)
			continue
		}
		others := 0
		for _, kv := range resp.Kvs {
			if string(kv.Key) != own {
				others++
			}
		}
		if others == 0 { // mutation:replace-wait
			return nil
		}
		co.logger.Info("cronx: waiting for the run it replaces to end", "job", r.job.name, "tick", r.tick, "runs", strconv.Itoa(others))
		// Wait for a deletion under the prefix after the read, then read
		// again.
		wctx, cancel := context.WithCancel(ctx)
		wch := cli.Watch(clientv3.WithRequireLeader(wctx), prefix, clientv3.WithPrefix(),
			clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterPut())
		select {
		case <-wch:
		case <-ctx.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
}
