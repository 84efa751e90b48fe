package election

import (
	"context"
	"errors"
	"io"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The sessions of one client send their keepalives on one LeaseKeepAlive
// stream. etcd's client fetches a fresh token for every stream it opens
// when it logs in with a password, and etcd checks the password (bcrypt,
// tens of milliseconds of its CPU) at each: clientv3's KeepAliveOnce opens
// a stream per keepalive, so with auth on every session's keepalive every
// TTL/3 cost etcd a password check. A stream shared is opened once, and
// again only after it fails or a keepalive on it goes unanswered; a
// keepalive is a message on it, answered in order with its lease's ID.
//
// Cost: one stream per client with sessions, and one authentication per
// stream opened.

// keepAlives is the shared stream of one client's sessions.
type keepAlives struct {
	client *clientv3.Client
	users  int // sessions using it; guarded by shared.mu

	// opening holds a token while a stream opens, so that sessions
	// keeping alive at once open one between them; a keepalive given up
	// stops waiting for it.
	opening chan struct{}

	mu        sync.Mutex
	cur       *kaStream      // nil until opened, and after it failed
	receivers sync.WaitGroup // one per stream opened, until it fails
}

// kaStream is one stream and the keepalives sent on it and not yet
// answered, one per lease (a session has one in flight at a time).
type kaStream struct {
	stream  pb.Lease_LeaseKeepAliveClient
	cancel  context.CancelFunc
	waiting map[clientv3.LeaseID]chan kaReply
}

type kaReply struct {
	ttl int64
	err error
}

// shared holds each client's keepAlives while a session of it lives.
var shared struct {
	mu sync.Mutex
	m  map[*clientv3.Client]*keepAlives
}

// keepAlivesOf returns client's shared stream, counting the session that
// uses it until it calls release.
func keepAlivesOf(client *clientv3.Client) *keepAlives {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.m == nil {
		shared.m = map[*clientv3.Client]*keepAlives{}
	}
	k := shared.m[client]
	if k == nil {
		k = &keepAlives{client: client, opening: make(chan struct{}, 1)}
		shared.m[client] = k
	}
	k.users++
	return k
}

// release ends a session's use of k; the last one closes the stream and
// waits for its receiver.
func (k *keepAlives) release() {
	shared.mu.Lock()
	k.users--
	last := k.users == 0
	if last {
		delete(shared.m, k.client)
	}
	shared.mu.Unlock()
	if !last {
		return
	}
	k.mu.Lock()
	cur := k.cur
	k.cur = nil
	k.mu.Unlock()
	if cur != nil {
		cur.cancel()
	}
	k.receivers.Wait()
}

// once sends a keepalive of lease and waits for its answer until ctx ends:
// the TTL etcd gave the lease, or rpctypes.ErrLeaseNotFound.
func (k *keepAlives) once(ctx context.Context, lease clientv3.LeaseID) (int64, error) {
	s, err := k.open(ctx)
	if err != nil {
		return 0, err
	}
	reply := make(chan kaReply, 1)
	k.mu.Lock()
	if k.cur != s {
		k.mu.Unlock()
		return 0, errors.New("election: the keepalive stream failed as it opened")
	}
	s.waiting[lease] = reply
	err = s.stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(lease)})
	switch {
	case errors.Is(err, io.EOF): // mutation:keepalive-eof-status
		// The server ended the stream, for a keepalive before this one
		// perhaps: gRPC tells why to Recv, not Send, so the receiver
		// hands this keepalive etcd's words (permission denied, say).
		err = nil
	case err != nil:
		delete(s.waiting, lease)
		k.dropLocked(s)
	}
	k.mu.Unlock()
	if err != nil {
		return 0, clientv3.ContextError(ctx, err)
	}
	select {
	case r := <-reply:
		return r.ttl, r.err // mutation:keepalive-stream-shared
	case <-ctx.Done():
		k.mu.Lock()
		if s.waiting[lease] == reply {
			delete(s.waiting, lease)
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// Unanswered in time: the member may be cut off. The next
			// keepalive opens a stream again, perhaps to another member.
			k.dropLocked(s)
		}
		k.mu.Unlock()
		return 0, ctx.Err()
	}
}

// open returns the current stream, opening one if there is none. The open
// is bounded by ctx; the stream lasts until it fails, or the last session
// ends.
func (k *keepAlives) open(ctx context.Context) (*kaStream, error) {
	select {
	case k.opening <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-k.opening }()
	k.mu.Lock()
	if s := k.cur; s != nil {
		k.mu.Unlock()
		return s, nil
	}
	k.mu.Unlock()
	// The stream ends with the client, and is refused by a member that has
	// no leader, as clientv3's own keepalives are.
	sctx, cancel := context.WithCancel(clientv3.WithRequireLeader(k.client.Ctx()))
	stop := context.AfterFunc(ctx, cancel)
	stream, err := pb.NewLeaseClient(k.client.ActiveConnection()).LeaseKeepAlive(sctx)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		return nil, clientv3.ContextError(ctx, err)
	}
	s := &kaStream{stream: stream, cancel: cancel, waiting: map[clientv3.LeaseID]chan kaReply{}}
	k.mu.Lock()
	k.cur = s
	k.receivers.Add(1)
	k.mu.Unlock()
	go k.receive(s)
	return s, nil
}

// receive hands each answer on s to the keepalive waiting for it, until s
// fails, when every keepalive waiting on it fails too.
func (k *keepAlives) receive(s *kaStream) {
	defer k.receivers.Done()
	for {
		resp, err := s.stream.Recv()
		k.mu.Lock()
		if err != nil {
			err = rpctypes.Error(err)
			for lease, w := range s.waiting {
				w <- kaReply{err: err}
				delete(s.waiting, lease)
			}
			k.dropLocked(s)
			k.mu.Unlock()
			return
		}
		lease := clientv3.LeaseID(resp.ID)
		if w, ok := s.waiting[lease]; ok {
			delete(s.waiting, lease)
			r := kaReply{ttl: resp.TTL}
			if resp.TTL <= 0 {
				r.err = rpctypes.ErrLeaseNotFound
			}
			w <- r
		}
		k.mu.Unlock()
	}
}

// dropLocked closes s, if it is the current stream, so that the next
// keepalive opens another; the caller holds k.mu.
func (k *keepAlives) dropLocked(s *kaStream) {
	if k.cur == s {
		k.cur = nil
	}
	s.cancel()
}
