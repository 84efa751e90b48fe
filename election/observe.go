package election

import (
	"context"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Observe streams who leads the election: the current leader first (or a
// Leader whose None reports true), then every change, including "no leader".
// A value is sent only when it differs from the one before: a new leader
// may come twice, as it takes the election's key and again with the time
// it was elected (Since) once it has recorded it. The stream
// survives compaction, etcd restarts and lost connections by reading the
// election again; a watcher that falls behind sees the latest state, not
// every intermediate one. The channel is closed when ctx is done.
func (e *Elector) Observe(ctx context.Context) <-chan Leader {
	return observe(ctx, e.client, e.prefix)
}

// Observe streams the leader of the election name under prefix without
// campaigning; see Elector.Observe.
func Observe(ctx context.Context, client *clientv3.Client, prefix, name string) (<-chan Leader, error) {
	if client == nil {
		return nil, errNilClient
	}
	if err := checkName("election", name); err != nil {
		return nil, err
	}
	return observe(ctx, client, prefix+"/election/"+name+"/"), nil
}

func observe(ctx context.Context, client *clientv3.Client, prefix string) <-chan Leader {
	ch := make(chan Leader, 1)
	go func() {
		defer close(ch)
		var last *Leader
		send := func(l Leader) bool {
			if last != nil && *last == l {
				return true
			}
			// Keep only the newest value for a slow reader.
			select {
			case <-ch:
			default:
			}
			select {
			case ch <- l:
			case <-ctx.Done():
				return false
			}
			last = &l
			return true
		}
		for ctx.Err() == nil {
			resp, err := client.Get(ctx, prefix, clientv3.WithPrefix())
			if err != nil {
				sleepCtx(ctx, 200*time.Millisecond)
				continue
			}
			keys := map[string]*mvccpb.KeyValue{}
			for _, kv := range resp.Kvs {
				keys[string(kv.Key)] = kv
			}
			if !send(firstCreated(keys)) {
				return
			}
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			wch := client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
			for wr := range wch {
				if wr.Err() != nil {
					break
				}
				for _, ev := range wr.Events {
					if ev.Type == mvccpb.DELETE {
						delete(keys, string(ev.Kv.Key))
					} else {
						keys[string(ev.Kv.Key)] = ev.Kv
					}
				}
				if !send(firstCreated(keys)) {
					cancel()
					return
				}
			}
			cancel()
		}
	}()
	return ch
}

func firstCreated(keys map[string]*mvccpb.KeyValue) Leader {
	var first *mvccpb.KeyValue
	for _, kv := range keys {
		if first == nil || kv.CreateRevision < first.CreateRevision {
			first = kv
		}
	}
	if first == nil {
		return Leader{}
	}
	return decodeLeader(first)
}
