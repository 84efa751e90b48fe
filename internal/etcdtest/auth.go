package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// User is a user EnableAuth adds: a role of its own name with perm on the
// keys under Prefix.
type User struct {
	Name, Password, Prefix string
	Perm                   clientv3.PermissionType
}

// EnableAuth turns authentication on at m, as `baton etcd` sets it up:
// root with rootPassword, and users, each with a role of its name that may
// use its prefix only. It returns a client logged in as root, closed by
// t.Cleanup, with which a test changes a role's permission.
func (m *Member) EnableAuth(t testing.TB, rootPassword string, users ...User) *clientv3.Client {
	t.Helper()
	cli := m.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("etcdtest: enable auth: %v", err)
		}
	}
	must(cli.UserAdd(ctx, "root", rootPassword))
	must(cli.UserGrantRole(ctx, "root", "root"))
	for _, u := range users {
		must(cli.RoleAdd(ctx, u.Name))
		must(cli.RoleGrantPermission(ctx, u.Name, u.Prefix, clientv3.GetPrefixRangeEnd(u.Prefix), u.Perm))
		must(cli.UserAdd(ctx, u.Name, u.Password))
		must(cli.UserGrantRole(ctx, u.Name, u.Name))
	}
	must(cli.AuthEnable(ctx))
	return m.ClientAs(t, "root", rootPassword)
}

// ClientAs returns a client of m logged in as user, closed by t.Cleanup.
func (m *Member) ClientAs(t testing.TB, user, password string) *clientv3.Client {
	t.Helper()
	cfg := ClientConfig(m.Endpoint())
	cfg.Username, cfg.Password = user, password
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcdtest: client of %s as %s: %v", m.Endpoint(), user, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
