package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// electionView is the state of one election as a watcher of its prefix sees
// it: the candidates' keys, and who leads, which is the key with the lowest
// create revision. A candidate that has been elected rewrites its key's
// value with the time it was elected ("since"): that write is the moment
// the candidate knows it leads.
type electionView struct {
	at         time.Time // when the watch delivered this state
	candidates int
	leaderKey  string
	leaderID   string
	elected    bool // the leader's value records its election
	keys       map[string]bool
}

// observer keeps the history of an election's states, so that a caller can
// wait for a state from a point in time on without missing one.
type observer struct {
	mu      sync.Mutex
	history []electionView
	changed chan struct{} // closed and replaced on each new state
	err     error
	cancel  context.CancelFunc
	done    chan struct{}
}

type candidate struct {
	createRev int64
	id        string
	elected   bool
}

// observe watches the election prefix (P/election/<name>/).
func observe(ctx context.Context, cli *clientv3.Client, prefix string) (*observer, error) {
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	keys := map[string]candidate{}
	for _, kv := range resp.Kvs {
		keys[string(kv.Key)] = decodeCandidate(kv)
	}
	ctx, cancel := context.WithCancel(ctx)
	o := &observer{changed: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	o.record(time.Now(), keys)
	wch := cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	go func() {
		defer close(o.done)
		for wr := range wch {
			at := time.Now()
			if err := wr.Err(); err != nil {
				o.fail(err)
				return
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					delete(keys, string(ev.Kv.Key))
				} else {
					keys[string(ev.Kv.Key)] = decodeCandidate(ev.Kv)
				}
			}
			o.record(at, keys)
		}
		o.fail(ctx.Err())
	}()
	return o, nil
}

func decodeCandidate(kv *mvccpb.KeyValue) candidate {
	var v struct {
		ID    string    `json:"id"`
		Since time.Time `json:"since"`
	}
	json.Unmarshal(kv.Value, &v)
	return candidate{createRev: kv.CreateRevision, id: v.ID, elected: !v.Since.IsZero()}
}

func (o *observer) record(at time.Time, keys map[string]candidate) {
	v := electionView{at: at, candidates: len(keys), keys: map[string]bool{}}
	var low int64
	for k, c := range keys {
		v.keys[k] = true
		if low == 0 || c.createRev < low {
			low, v.leaderKey, v.leaderID, v.elected = c.createRev, k, c.id, c.elected
		}
	}
	o.mu.Lock()
	o.history = append(o.history, v)
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
}

func (o *observer) fail(err error) {
	o.mu.Lock()
	if o.err == nil {
		o.err = err
	}
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
}

func (o *observer) close() {
	o.cancel()
	<-o.done
}

// mark returns a position in the history, for waitFrom.
func (o *observer) mark() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.history)
}

// now returns the latest state.
func (o *observer) now() electionView {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.history[len(o.history)-1]
}

// waitFrom returns the first state at position from or later for which
// cond holds.
func (o *observer) waitFrom(ctx context.Context, from int, timeout time.Duration, what string, cond func(electionView) bool) (electionView, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for i := from; ; {
		o.mu.Lock()
		for ; i < len(o.history); i++ {
			if cond(o.history[i]) {
				v := o.history[i]
				o.mu.Unlock()
				return v, nil
			}
		}
		changed, err := o.changed, o.err
		o.mu.Unlock()
		if err != nil {
			return electionView{}, fmt.Errorf("%s: election watch: %w", what, err)
		}
		select {
		case <-changed:
		case <-t.C:
			return electionView{}, fmt.Errorf("%s: not within %v", what, timeout)
		case <-ctx.Done():
			return electionView{}, fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}

// wait returns the first state, the current one included, for which cond
// holds.
func (o *observer) wait(ctx context.Context, timeout time.Duration, what string, cond func(electionView) bool) (electionView, error) {
	return o.waitFrom(ctx, o.mark()-1, timeout, what, cond)
}
