package etcdtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"google.golang.org/grpc"
)

// Space is a test's own key space on the member that a test binary's tests
// share. Its clients see only the space: every key they name is put under
// the space's prefix, and their watches and leases stay in it, so tests
// that run at once, or one after another, never see each other's keys.
// A process a test starts (the baton command) is given the same space
// through Env's BATON_PREFIX.
//
// What a space cannot isolate is what etcd holds for every client: its
// revision counter, members, auth, alarms and compaction. A test that
// depends on those, or stops, pauses or wipes etcd, starts a member of its
// own (Start).
type Space struct {
	member *Member
	prefix string
}

// The shared member starts with the first Shared of a test binary and ends
// with the binary (its program exits when the test process does).
var shared struct {
	once   sync.Once
	member *Member
	err    error
	spaces atomic.Int64
}

// Shared returns a new key space on the test binary's shared member,
// starting the member if this is the first.
func Shared(t testing.TB) *Space {
	t.Helper()
	WatchStalls(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "etcdtest-shared-")
		if err != nil {
			shared.err = err
			return
		}
		c, err := launch(dir, 1, Options{}, true)
		if err != nil {
			if c != nil {
				c.Kill()
			}
			os.RemoveAll(dir)
			shared.err = err
			return
		}
		if err := guard(c.Members[0]); err != nil {
			c.Kill()
			os.RemoveAll(dir)
			shared.err = err
			return
		}
		shared.member = c.Members[0]
	})
	if shared.err != nil {
		t.Fatalf("etcdtest: the shared member: %v", shared.err)
	}
	// Fixed width, so that no space's prefix is a prefix of another's.
	return &Space{member: shared.member, prefix: fmt.Sprintf("%s%06d", spacesPrefix, shared.spaces.Add(1))}
}

// Prefix is the space's prefix in the shared member's key space.
func (s *Space) Prefix() string { return s.prefix }

// Addr is the shared member's client address, host:port, for a proxy to
// dial; a client of the proxy is made with s.NewClient.
func (s *Space) Addr() string { return s.member.Addr() }

// Client returns a client of the space, closed at the end of the test.
func (s *Space) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return s.NewClient(t, s.member.Endpoints()...)
}

// NewClient returns a client of the space through endpoints (a proxy of
// the shared member), closed at the end of the test.
func (s *Space) NewClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(s.ClientConfig(endpoints...))
	if err != nil {
		t.Fatalf("etcdtest: client of %v: %v", endpoints, err)
	}
	t.Cleanup(func() { cli.Close() })
	return s.Within(cli)
}

// TxnSeeingClient is a client of the space, closed at the end of the
// test, that shows see every transaction it sends as etcd gets it (its
// keys under the space's prefix): for a test of what a transaction holds.
func (s *Space) TxnSeeingClient(t testing.TB, see func(*etcdserverpb.TxnRequest)) *clientv3.Client {
	t.Helper()
	cfg := s.ClientConfig()
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if txn, ok := req.(*etcdserverpb.TxnRequest); ok {
				see(txn)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return s.Within(cli)
}

// EachPut calls f with every put of txn, in every branch of it and of the
// transactions nested in it.
func EachPut(txn *etcdserverpb.TxnRequest, f func(*etcdserverpb.PutRequest)) {
	for _, op := range append(append([]*etcdserverpb.RequestOp{}, txn.Success...), txn.Failure...) {
		if p := op.GetRequestPut(); p != nil {
			f(p)
		}
		if nested := op.GetRequestTxn(); nested != nil {
			EachPut(nested, f)
		}
	}
}

// PutsEnding counts the puts of txn (EachPut) of keys that end in suffix.
func PutsEnding(txn *etcdserverpb.TxnRequest, suffix string) int {
	n := 0
	EachPut(txn, func(p *etcdserverpb.PutRequest) {
		if strings.HasSuffix(string(p.Key), suffix) {
			n++
		}
	})
	return n
}

// ClientConfig is ClientConfig with the credentials of a space's client;
// a client made from it is confined to the space with Within.
func (s *Space) ClientConfig(endpoints ...string) clientv3.Config {
	if len(endpoints) == 0 {
		endpoints = s.member.Endpoints()
	}
	cfg := ClientConfig(endpoints...)
	cfg.Username, cfg.Password = spaceUser, spacePassword
	return cfg
}

// guard turns on auth, so that only a client of a space reaches the shared
// member, and only under the spaces' prefix: a test that made a client of
// the member's endpoint alone (a proxy's, say) fails at its first request,
// rather than pass while it looks at keys nobody else writes; and what no
// space may change (compaction, auth, alarms) is refused.
func guard(m *Member) error {
	cli, err := clientv3.New(ClientConfig(m.Endpoint()))
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", spaceRootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, spaceUser); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, spaceUser, spacesPrefix, clientv3.GetPrefixRangeEnd(spacesPrefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, spaceUser, spacePassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, spaceUser, spaceUser); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("guard the shared member: %w", err)
		}
	}
	return nil
}

// The shared member's users: root, and the one every space's client is.
const (
	spacesPrefix      = "/etcdtest/"
	spaceUser         = "etcdtest"
	spacePassword     = "etcdtest"
	spaceRootPassword = "etcdtest-root"
)

// Within confines cli to the space, and returns it.
func (s *Space) Within(cli *clientv3.Client) *clientv3.Client {
	cli.KV = namespace.NewKV(cli.KV, s.prefix)
	cli.Watcher = namespace.NewWatcher(cli.Watcher, s.prefix)
	cli.Lease = namespace.NewLease(cli.Lease, s.prefix)
	return cli
}

// Endpoint is the shared member's client URL, for a process's list of
// endpoints (Env). A client made from it alone is refused: a client of the
// space is made by Client, NewClient or Within.
func (s *Space) Endpoint() string { return s.member.Endpoint() }

// Env is the environment that gives a baton process the space: endpoints
// (the shared member's when none is given, else a proxy's), and
// BATON_PREFIX, the space's own keys under baton's default prefix, which a
// client of the space names "/baton".
func (s *Space) Env(endpoints ...string) []string {
	if len(endpoints) == 0 {
		endpoints = s.member.Endpoints()
	}
	return []string{
		"BATON_ETCD_ENDPOINTS=" + strings.Join(endpoints, ","),
		"BATON_PREFIX=" + s.BatonPrefix("/baton"),
		"BATON_ETCD_USERNAME=" + spaceUser,
		"BATON_ETCD_PASSWORD=" + spacePassword,
	}
}

// Setenv sets Env in the test's environment, for code that reads it.
func (s *Space) Setenv(t testing.TB, endpoints ...string) {
	t.Helper()
	for _, kv := range s.Env(endpoints...) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// BatonPrefix is the prefix a baton process is given for keys that a
// client of the space names p.
func (s *Space) BatonPrefix(p string) string { return s.prefix + p }
