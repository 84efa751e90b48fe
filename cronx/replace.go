package cronx

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrReplaced is the cause of the context of a run of a Replace job that a
// later tick replaced: context.Cause(ctx) returns it once the later tick
// has been claimed.
var ErrReplaced = errors.New("cronx: run replaced by a later tick")

// A Replace job's tick is claimed without the Forbid check, beside the run
// in progress, whose marker (running/<seq>) says who runs it. Each run of
// the job watches the job's claim key from its own claim on: a later claim
// there cancels the run, wherever it runs, with ErrReplaced. The new run
// starts only once no other marker of the job is left, that is, once the
// run before has returned and released its marker, or its replica's lease
// has expired; so two runs never overlap. A run still waiting when an even
// later tick is claimed gives way to it without starting. A trigger of a
// Replace job is claimed as under Forbid: it waits for no run and replaces
// none.

// replacing prepares a run of a Replace job under its claim: it returns the
// run's context, cancelled with ErrReplaced by a later claim of the job, and
// a func to release the watch, once every earlier run of the job has
// ended. It returns why, having released the watch, if the run must not
// start: ErrReplaced when a later tick was claimed first, else the cause
// of ctx's end (the claim's session lost).
func (co *coordinator) replacing(ctx context.Context, r run, claim election.Claim) (context.Context, func(), error) {
	ctx, cancel := context.WithCancelCause(ctx)
	wctx, stopWatch := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		co.watchLaterClaim(wctx, r, claim.Revision, func() { cancel(ErrReplaced) }) // mutation:replace-cancel
	}()
	release := func() {
		stopWatch()
		<-done
		cancel(nil)
	}
	if err := co.awaitEarlierRuns(ctx, r, claim.Fence.Key); err != nil {
		release()
		return nil, nil, err
	}
	return ctx, release, nil
}

// watchLaterClaim calls replaced once the job's claim key is written after
// rev, or returns when ctx ends. Every such write is a later tick's claim:
// a claim never writes a lower one, and the ticks of a Replace job are
// never claimed ahead (and so never withdrawn). A watch that etcd ends
// (compacted past its revision, or lost) is followed by a read of the key
// and a new watch from that read.
func (co *coordinator) watchLaterClaim(ctx context.Context, r run, rev int64, replaced func()) {
	cli, key := co.etcd(), co.keys.last(r.job)
	from := rev + 1
	for ctx.Err() == nil {
		for wr := range cli.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithRev(from)) {
			if len(wr.Events) > 0 {
				replaced()
				return
			}
			if err := wr.Err(); err != nil && ctx.Err() == nil {
				co.logger.Info("cronx: watch for a later tick ended; reading the claim", "job", r.job, "tick", r.tick, "err", err)
			}
		}
		resp, err := cli.Get(ctx, key)
		if err != nil {
			sleep(ctx, retryBackoff)
			continue
		}
		if len(resp.Kvs) > 0 && resp.Kvs[0].ModRevision > rev {
			replaced()
			return
		}
		from = resp.Header.Revision + 1
	}
}

// giveUp reports a run that did not start, having waited for the run it
// replaces, and releases its marker. why is ErrReplaced when a later tick
// was claimed meanwhile; else the claim's session was lost (etcd out of
// reach), or this replica stopped or gave up its term, which the run's
// context ends with.
func (co *coordinator) giveUp(r run, claim election.Claim, sess *election.Session, why error) {
	switch {
	case errors.Is(why, ErrReplaced):
		co.logger.Info("cronx: skipped: a later tick was claimed while the run waited to start", "job", r.job, "tick", r.tick)
		co.notRun(r.job, r.tick, ReasonOvertaken, nil)
	case sess.Context().Err() != nil:
		co.logger.Error(why, "cronx: tick not run: its claim was lost while it waited for the run it replaces", "job", r.job, "tick", r.tick)
		co.notRun(r.job, r.tick, ReasonEtcdUnavailable, why)
	default:
		co.logger.Error(why, "cronx: tick not run: this replica stopped while the run waited for the run it replaces", "job", r.job, "tick", r.tick)
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	co.rec.release(ctx, finishItem{r: r, claim: claim, sess: sess})
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
// or ctx ends.
func (co *coordinator) awaitEarlierRuns(ctx context.Context, r run, own string) error {
	cli := co.etcd()
	prefix := co.keys.running(r.job)
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
		co.logger.Info("cronx: waiting for the run it replaces to end", "job", r.job, "tick", r.tick, "runs", strconv.Itoa(others))
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
