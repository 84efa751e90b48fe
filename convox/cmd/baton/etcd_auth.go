package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/batonhq/baton/convox"
	"github.com/batonhq/baton/election"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"google.golang.org/grpc/metadata"
)

// etcd auth, as `baton etcd` sets it up.
//
// Each app user (BATON_ETCD_USERNAME, and one per --user) gets a role of its
// own name that may read and write its prefix P's keys, P/..., and nothing
// else. The first start with users creates root with a random secret,
// creates the users and enables auth. Every later start applies the users
// again: a changed password or prefix takes effect, a new user is added.
//
// Root's secret is never printed. It is kept in etcd itself, under
// rootSecretKey, outside every app's prefix: only root may read it through
// the API, and a member reads it from its own copy of the data, without
// auth, so each member of a cluster can apply users after a restart. Whoever
// can read the data directory can read the secret, as they can read every
// key in it.

// rootSecretKey holds root's secret.
const rootSecretKey = "/baton-etcd/root-secret"

// authTimeout bounds setting up auth once the member is ready.
const authTimeout = 30 * time.Second

// etcdUser is an app's user: name, password and the prefix it may use.
type etcdUser struct {
	name, password, prefix string
	// from says where the user comes from, for errors.
	from string
}

// etcdUsers reads the users from the environment: BATON_ETCD_USERNAME and
// BATON_ETCD_PASSWORD with the prefix its clients resolve (BATON_PREFIX,
// else /baton/$APP under Convox, else /baton), and each --user NAME:PREFIX
// with the password in BATON_ETCD_PASSWORD_<NAME>.
func etcdUsers(specs []string) ([]etcdUser, error) {
	var users []etcdUser
	conn := election.ConnectionFromEnv()
	if (conn.Username == "") != (conn.Password == "") {
		return nil, errors.New("BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD must be set together")
	}
	if conn.Username != "" {
		prefix := convox.Load().Prefix
		if prefix == "" {
			prefix = election.DefaultPrefix
		}
		users = append(users, etcdUser{name: conn.Username, password: conn.Password, prefix: prefix, from: "BATON_ETCD_USERNAME"})
	}
	for _, spec := range specs {
		name, prefix, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("--user %q: want NAME:PREFIX", spec)
		}
		v := passwordVar(name)
		password := os.Getenv(v)
		if password == "" {
			return nil, fmt.Errorf("--user %q: its password variable %s is unset or empty", spec, v)
		}
		users = append(users, etcdUser{name: name, password: password, prefix: prefix, from: "--user " + spec})
	}
	seen := map[string]bool{}
	for _, u := range users {
		switch {
		case u.name == "" || strings.ContainsAny(u.name, " \t\n"):
			return nil, fmt.Errorf("%s: user name %q is empty or has white space", u.from, u.name)
		case u.name == "root":
			return nil, fmt.Errorf("%s: user name root is reserved for etcd's administrator", u.from)
		case seen[u.name]:
			return nil, fmt.Errorf("%s: user %q is given twice", u.from, u.name)
		case u.prefix == "" || strings.HasSuffix(u.prefix, "/") || strings.ContainsAny(u.prefix, " \t\n"):
			return nil, fmt.Errorf("%s: prefix %q is empty, ends with '/' or has white space", u.from, u.prefix)
		case strings.HasPrefix(rootSecretKey, u.prefix+"/"):
			return nil, fmt.Errorf("%s: prefix %q would hold root's secret", u.from, u.prefix)
		}
		seen[u.name] = true
	}
	return users, nil
}

// passwordVar is the variable that holds the password of --user NAME:
// BATON_ETCD_PASSWORD_ and NAME in upper case, other than letters and
// digits as '_' (billing-api: BATON_ETCD_PASSWORD_BILLING_API).
func passwordVar(name string) string {
	b := []byte(strings.ToUpper(name))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	return "BATON_ETCD_PASSWORD_" + string(b)
}

const unauthenticatedWarning = `baton etcd: WARNING: etcd runs WITHOUT AUTHENTICATION. Anyone who reaches
baton etcd:   %s can read, change and delete every key: pause, resume and
baton etcd:   trigger jobs, break locks and elections. Set BATON_ETCD_USERNAME and
baton etcd:   BATON_ETCD_PASSWORD in this process's environment, as in its clients',
baton etcd:   to turn auth on.
`

// applyAuth sets up auth for users on the ready member e, as described
// above, or warns that it runs without.
func applyAuth(ctx context.Context, env *environ, e *embed.Etcd, users []etcdUser) error {
	enabled := e.Server.AuthStore().IsAuthEnabled()
	if len(users) == 0 {
		if enabled {
			fmt.Fprintln(env.stderr, "baton etcd: auth is on, from an earlier start; no user given, the existing users are kept")
		} else {
			fmt.Fprintf(env.stderr, unauthenticatedWarning, urlStrings(e.Config().AdvertiseClientUrls))
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	// A client inside this process: no network, no TLS to verify.
	cli := v3client.New(e.Server)
	defer cli.Close()
	if !enabled {
		if e.Server.Leader() != e.Server.MemberID() {
			fmt.Fprintln(env.stderr, "baton etcd: auth is set up by the cluster's leader")
			return nil
		}
		if err := enableAuth(ctx, cli, users); err != nil {
			return fmt.Errorf("set up auth: %w", err)
		}
	} else {
		secret, err := storedSecret(ctx, e)
		if err != nil {
			return err
		}
		if secret == "" {
			fmt.Fprintf(env.stderr, "baton etcd: auth is on but root's secret is not in this member's data (%s); the users are kept as they were\n", rootSecretKey)
			return nil
		}
		// The members of a cluster restart together on a deploy: until
		// they agree on a leader, etcd answers "leader changed" or "no
		// leader", which the next try outlives.
		err = retryTransient(ctx, func() error {
			rctx, err := asRoot(ctx, cli, secret)
			if err != nil {
				return err
			}
			for _, u := range users {
				if err := ensureUser(rctx, cli, u, true); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, u := range users {
		fmt.Fprintf(env.stderr, "baton etcd: auth on: user %s may use %s/ only\n", u.name, u.prefix)
	}
	return nil
}

// retryTransient calls f until it succeeds, fails for a reason other than
// a leader election in progress, or ctx ends.
func retryTransient(ctx context.Context, f func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := f()
		if err == nil || !(errors.Is(err, rpctypes.ErrLeaderChanged) || errors.Is(err, rpctypes.ErrNoLeader) ||
			errors.Is(err, rpctypes.ErrTimeout) || errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail)) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (etcd still electing a leader when %v ran out)", err, authTimeout)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// enableAuth creates root and the users, enables auth and stores root's
// secret, which only root may read from then on.
func enableAuth(ctx context.Context, cli *clientv3.Client, users []etcdUser) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	secret := hex.EncodeToString(b)
	if _, err := cli.UserAdd(ctx, "root", secret); errors.Is(err, rpctypes.ErrUserAlreadyExist) {
		// Left by a start that stopped before enabling auth.
		_, err = cli.UserChangePassword(ctx, "root", secret)
		if err != nil {
			return fmt.Errorf("root: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("root: %w", err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		return fmt.Errorf("root: %w", err)
	}
	for _, u := range users {
		if err := ensureUser(ctx, cli, u, false); err != nil {
			return err
		}
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return err
	}
	rctx, err := asRoot(ctx, cli, secret)
	if err != nil {
		return err
	}
	if _, err := cli.Put(rctx, rootSecretKey, secret); err != nil {
		return fmt.Errorf("store root's secret: %w", err)
	}
	return nil
}

// asRoot returns ctx carrying root's token for the in-process client.
func asRoot(ctx context.Context, cli *clientv3.Client, secret string) (context.Context, error) {
	resp, err := cli.Authenticate(ctx, "root", secret)
	if err != nil {
		return nil, fmt.Errorf("authenticate as root: %w", err)
	}
	return metadata.NewIncomingContext(ctx, metadata.Pairs(rpctypes.TokenFieldNameGRPC, resp.Token)), nil
}

// storedSecret reads root's secret from the member's own data.
func storedSecret(ctx context.Context, e *embed.Etcd) (string, error) {
	r, err := e.Server.KV().Range(ctx, []byte(rootSecretKey), nil, mvcc.RangeOptions{})
	if err != nil {
		return "", fmt.Errorf("read root's secret: %w", err)
	}
	if len(r.KVs) == 0 {
		return "", nil
	}
	return string(r.KVs[0].Value), nil
}

// ensureUser creates u, or sets its password if it changed, and limits it
// to its prefix through a role of its own name.
func ensureUser(ctx context.Context, cli *clientv3.Client, u etcdUser, authOn bool) error {
	_, err := cli.UserAdd(ctx, u.name, u.password)
	switch {
	case errors.Is(err, rpctypes.ErrUserAlreadyExist):
		if !authOn || !passwordHolds(ctx, cli, u) {
			if _, err := cli.UserChangePassword(ctx, u.name, u.password); err != nil {
				return fmt.Errorf("user %s: change password: %w", u.name, err)
			}
		}
	case err != nil:
		return fmt.Errorf("user %s: %w", u.name, err)
	}
	if _, err := cli.RoleAdd(ctx, u.name); err != nil && !errors.Is(err, rpctypes.ErrRoleAlreadyExist) {
		return fmt.Errorf("role %s: %w", u.name, err)
	}
	key, end := u.prefix+"/", clientv3.GetPrefixRangeEnd(u.prefix+"/")
	role, err := cli.RoleGet(ctx, u.name)
	if err != nil {
		return fmt.Errorf("role %s: %w", u.name, err)
	}
	granted := false
	for _, p := range role.Perm {
		if string(p.Key) == key && string(p.RangeEnd) == end && p.PermType == clientv3.PermReadWrite {
			granted = true
			continue
		}
		// A prefix the user had before: it has no business there now.
		if _, err := cli.RoleRevokePermission(ctx, u.name, string(p.Key), string(p.RangeEnd)); err != nil {
			return fmt.Errorf("role %s: revoke %q: %w", u.name, p.Key, err)
		}
	}
	if !granted {
		if _, err := cli.RoleGrantPermission(ctx, u.name, key, end, clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
			return fmt.Errorf("role %s: grant %s: %w", u.name, key, err)
		}
	}
	if _, err := cli.UserGrantRole(ctx, u.name, u.name); err != nil {
		return fmt.Errorf("user %s: grant role: %w", u.name, err)
	}
	return nil
}

// passwordHolds reports whether u's password is still the one etcd has.
func passwordHolds(ctx context.Context, cli *clientv3.Client, u etcdUser) bool {
	_, err := cli.Authenticate(ctx, u.name, u.password)
	return err == nil
}
