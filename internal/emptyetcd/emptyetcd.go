// Package emptyetcd notices an etcd that came back without its data.
//
// An etcd that loses its data (a member on an emptyDir that restarted, a
// data directory deleted) comes back as an empty store that answers like
// the old one. baton survives it (new sessions, new elections, the next
// tick runs), but what etcd held is gone: Lost. Watch notices it and says
// so, and records it under P/etcd/empty, where Last (and `baton status`)
// read it.
//
// It keeps a marker, P/etcd/born, and remembers the cluster ID, the
// marker's create revision and the highest revision it has seen. The etcd
// came back empty when the marker is gone or was created anew, when the
// cluster ID changed, or when the revision went backwards. Deleting the
// marker by hand looks the same, and is reported the same.
//
// Watch does not poll: it looks once when it starts and then each time its
// caller asks, which a caller does when it gets a new lease. An etcd that
// lost its data lost every lease with it, so every holder of one finds out
// at its next keepalive and makes a new one; a replica that only waits
// costs etcd nothing more than its keepalives. A marker deleted by hand is
// therefore noticed at the next new lease, not at once.
package emptyetcd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Lost is what baton loses with etcd's data.
const Lost = "pauses, run --once claims (a retried run then runs again), run history, held locks and leaderships"

// Event is an etcd found to have come back without its data.
type Event struct {
	// At is when it was found, By the identity that found it.
	At time.Time `json:"at"`
	By string    `json:"by"`
	// Why says what gave it away.
	Why string `json:"why"`
}

// checkTimeout bounds one look; a look that fails is tried again after
// retryMin, then less and less often, up to retryMax, until one answers.
const (
	checkTimeout = 5 * time.Second
	retryMin     = time.Second
	retryMax     = 30 * time.Second
)

func bornKey(prefix string) string  { return prefix + "/etcd/born" }
func emptyKey(prefix string) string { return prefix + "/etcd/empty" }

// Watch checks the etcd of client under prefix when it starts and then
// once for each receive from recheck, until ctx is done, and calls found,
// from its own goroutine, each time it finds that etcd came back empty,
// after recording it for Last. identity names the caller in the record. A
// look that etcd does not answer is tried again with backoff until one
// does, so a recheck asked while etcd is out is not lost. It returns when
// ctx is done.
func Watch(ctx context.Context, client *clientv3.Client, prefix, identity string, recheck <-chan struct{}, found func(Event)) {
	c := NewChecker(client, prefix, identity)
	for {
		wait := retryMin
		for {
			e, empty, err := c.Check(ctx)
			if empty {
				found(e)
				continue // take the new etcd's measure at once
			}
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, retryMax)
		}
		select {
		case <-ctx.Done():
			return
		case <-recheck:
		}
	}
}

// A Checker looks at one etcd when asked and remembers what it saw, so a
// later look can tell that etcd came back empty. Watch asks one on its
// caller's cue; a short-lived process asks one itself, when it starts and
// when it loses its lease. A Checker is not safe for concurrent use.
type Checker struct {
	client           *clientv3.Client
	prefix, identity string
	mem              etcdMemory
}

// NewChecker returns a Checker of the etcd of client under prefix; identity
// names the caller in what it records.
func NewChecker(client *clientv3.Client, prefix, identity string) *Checker {
	return &Checker{client: client, prefix: prefix, identity: identity}
}

// Check looks once, within a few seconds. The first look that etcd answers
// takes its measure (and leaves the marker, if none is there). A later look
// that finds etcd came back empty records it for Last and returns it with
// empty true; the look after it measures the new etcd. err is that of a
// look that etcd did not answer.
func (c *Checker) Check(ctx context.Context) (e Event, empty bool, err error) {
	why, err := c.mem.check(ctx, c.client, c.prefix, c.identity)
	if why == "" {
		return Event{}, false, err
	}
	e = Event{At: time.Now().UTC(), By: c.identity, Why: why}
	if b, err := json.Marshal(e); err == nil {
		_, _ = c.client.Put(ctx, emptyKey(c.prefix), string(b))
	}
	c.mem = etcdMemory{}
	return e, true, nil
}

// etcdMemory is what a Checker remembers of the etcd it watches.
type etcdMemory struct {
	known   bool
	cluster uint64
	born    int64 // the marker's create revision
	maxRev  int64
}

// check reads the marker and returns why etcd came back empty, or "" with
// the error of a look that etcd did not answer.
func (m *etcdMemory) check(ctx context.Context, client *clientv3.Client, prefix, identity string) (string, error) {
	key := bornKey(prefix)
	rctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	resp, err := client.Get(rctx, key)
	if err != nil {
		return "", err
	}
	h := resp.Header
	switch {
	case !m.known:
		born := int64(0)
		if len(resp.Kvs) == 1 {
			born = resp.Kvs[0].CreateRevision
		} else {
			value := fmt.Sprintf(`{"by":%q,"at":%q}`, identity, time.Now().UTC().Format(time.RFC3339))
			t, err := client.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, value)).Else(clientv3.OpGet(key)).Commit()
			if err != nil {
				return "", err
			}
			h = t.Header
			born = t.Header.Revision
			if !t.Succeeded && len(t.Responses) == 1 && len(t.Responses[0].GetResponseRange().Kvs) == 1 {
				born = t.Responses[0].GetResponseRange().Kvs[0].CreateRevision
			}
		}
		*m = etcdMemory{known: true, cluster: h.ClusterId, born: born, maxRev: h.Revision}
		return "", nil
	case h.ClusterId != m.cluster:
		return fmt.Sprintf("its cluster ID changed from %x to %x", m.cluster, h.ClusterId), nil
	case h.Revision < m.maxRev:
		return fmt.Sprintf("its revision went back from %d to %d", m.maxRev, h.Revision), nil
	case len(resp.Kvs) == 0:
		return fmt.Sprintf("baton's marker %s is gone", key), nil
	case resp.Kvs[0].CreateRevision != m.born:
		return fmt.Sprintf("baton's marker %s was made anew (at revision %d, was %d)", key, resp.Kvs[0].CreateRevision, m.born), nil
	}
	m.maxRev = max(m.maxRev, h.Revision)
	return "", nil
}

// Last returns the last time a watcher found the etcd of client empty
// under prefix; ok is false if none ever did.
func Last(ctx context.Context, client *clientv3.Client, prefix string) (e Event, ok bool, err error) {
	resp, err := client.Get(ctx, emptyKey(prefix))
	if err != nil || len(resp.Kvs) == 0 {
		return e, false, err
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &e); err != nil {
		return e, false, fmt.Errorf("election: %s: %w", emptyKey(prefix), err)
	}
	return e, true, nil
}
