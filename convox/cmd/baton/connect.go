package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton/convox"
	"github.com/batonhq/baton/election"
	"github.com/spf13/pflag"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errRefused marks an etcd that answered and refused baton (wrong
// credentials, none where auth is on, or a user without permission on the
// prefix), or that baton refused (a certificate it cannot verify,
// certError). Waiting does not cure it, so every command fails at once on
// it.
var errRefused = errors.New("etcd refused the connection")

// refusedError says why etcd refused, naming what to change.
type refusedError struct {
	why string
	err error
}

func (e *refusedError) Error() string { return e.why + ": " + e.err.Error() }
func (e *refusedError) Is(target error) bool {
	return target == errRefused
}
func (e *refusedError) Unwrap() error { return e.err }

// access is what a command needs under the prefix: status only reads, so
// a read-only user may look at a cluster.
type access int

const (
	readWrite access = iota
	readOnly
)

// connect merges the configuration and dials etcd, and checks within the
// dial timeout that etcd answers and lets this user read (and, unless the
// command only reads, write) under the prefix. Any endpoint that answers is enough: the check goes through the
// client's balancer, which skips endpoints that are down or do not answer.
func (c *connFlags) connect(ctx context.Context) (convox.Config, *clientv3.Client, error) {
	cfg, err := c.config()
	if err != nil {
		return cfg, nil, configError{err}
	}
	cli, err := dial(ctx, cfg, c.dialTimeout, c.access)
	return cfg, cli, err
}

// configError is an error of the configuration, found before any dial.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// connectFailed reports an error of connect for the one-shot commands: a
// configuration that can never work is a usage error (2), as in every
// other command; a TLS file that cannot be read, or an etcd that does not
// answer or refuses, a failure (1).
func connectFailed(env *environ, fs *pflag.FlagSet, name string, err error) int {
	if errors.As(err, new(configError)) && isUsage(err) {
		return usageError(env, fs, "%v", err)
	}
	return fail(env, name, err)
}

// dial connects to etcd as cfg says and checks access within timeout. A
// dial that has not succeeded within probeAfter gets baton's own look at
// the endpoints beside it (tlsCause): a TLS mistake, which gRPC would
// report only as the deadline, is then the error at once.
func dial(ctx context.Context, cfg convox.Config, timeout time.Duration, need access) (*clientv3.Client, error) {
	ccfg, err := cfg.Connection.ClientConfig()
	if err != nil {
		return nil, redactError(err)
	}
	if timeout <= 0 {
		timeout = election.DefaultDialTimeout
	}
	ccfg.DialTimeout = timeout // bounds the authentication inside clientv3.New
	ccfg.Logger = zap.NewNop() // baton reports what failed itself
	eps := redactedEndpoints(cfg.Connection.Endpoints)
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type dialed struct {
		cli *clientv3.Client
		err error
	}
	done := make(chan dialed, 1)
	go func() {
		cli, err := clientv3.New(ccfg)
		if err == nil {
			err = checkAccess(dctx, cli, prefixOf(cfg), need)
			if err != nil {
				cli.Close()
				cli = nil
			}
		}
		done <- dialed{cli, err}
	}()
	pctx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	wait := time.NewTimer(probeAfter)
	defer wait.Stop()
	var d dialed
	var probe chan error // the look's answer, once it started
	select {
	case d = <-done:
	case <-wait.C:
		probe = make(chan error, 1)
		go func() { probe <- tlsCause(pctx, cfg, ccfg.TLS) }()
		select {
		case d = <-done:
		case cause := <-probe:
			probe <- cause // read again below
			if cause != nil {
				go func() { // the dial ends with dctx, as dial returns
					if d := <-done; d.cli != nil {
						d.cli.Close()
					}
				}()
				return nil, redactError(cause)
			}
			d = <-done
		}
	}
	if d.err != nil {
		if unreachable(d.err) {
			var cause error
			if probe != nil {
				cause = <-probe
			} else {
				cause = tlsCause(ctx, cfg, ccfg.TLS)
			}
			if cause != nil {
				return nil, redactError(cause)
			}
		}
		return nil, redactError(explainDialError(d.err, eps, cfg, timeout, need))
	}
	return d.cli, nil
}

// probeAfter is how long a dial may take before baton looks at the
// endpoints itself: a healthy etcd answers well within it, so it costs a
// healthy start nothing.
const probeAfter = 250 * time.Millisecond

// prefixOf is the key prefix the command works under: the flag or
// BATON_PREFIX (convox.Load reads it), else election's default.
func prefixOf(cfg convox.Config) string {
	if cfg.Prefix != "" {
		return cfg.Prefix
	}
	return election.DefaultPrefix
}

// checkAccess asks etcd for a transaction that reads under prefix and would
// write there, with a condition that never holds: etcd checks the
// permissions of both branches and writes nothing. A read-only command asks
// for the read alone. An error says which permission is missing.
func checkAccess(ctx context.Context, cli *clientv3.Client, prefix string, need access) error {
	key := prefix + "/"
	if need == readOnly {
		_, err := cli.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err
	}
	_, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(key), "<", 0)).
		Then(clientv3.OpPut(key, "")).
		Else(clientv3.OpGet(key, clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Commit()
	return err
}

// explainDialError turns a failed dial or access check into an error that
// names the endpoints and the cause.
func explainDialError(err error, eps string, cfg convox.Config, timeout time.Duration, need access) error {
	user := cfg.Connection.Username
	prefix := prefixOf(cfg)
	switch {
	case errors.Is(err, rpctypes.ErrAuthFailed):
		return &refusedError{fmt.Sprintf("etcd %s refused user %q: wrong user name or password (--username, --password, BATON_ETCD_USERNAME, BATON_ETCD_PASSWORD)", eps, user), err}
	case errors.Is(err, rpctypes.ErrUserEmpty), errors.Is(err, rpctypes.ErrInvalidAuthToken) && user == "":
		return &refusedError{fmt.Sprintf("etcd %s has authentication on and no user was given: set BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD (or --username and --password)", eps), err}
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		who := fmt.Sprintf("user %q", user)
		if user == "" {
			who = "an unauthenticated client"
		}
		what, perm := "read and write", "readwrite"
		if need == readOnly {
			what, perm = "read", "read"
		}
		return &refusedError{fmt.Sprintf("etcd %s: %s may not %s under the prefix %s: grant its role %s on %s/ (or use that user's prefix with --prefix, BATON_PREFIX)", eps, who, what, prefix, perm, prefix), err}
	case errors.Is(err, rpctypes.ErrAuthNotEnabled):
		return &refusedError{fmt.Sprintf("etcd %s: %v", eps, err), err}
	}
	if s, ok := status.FromError(err); ok && (s.Code() == codes.Unauthenticated || s.Code() == codes.PermissionDenied) {
		return &refusedError{fmt.Sprintf("etcd %s refused access", eps), err}
	}
	if unreachable(err) {
		return fmt.Errorf("etcd %s unreachable: no endpoint answered within %v (--dial-timeout): %w", eps, timeout, err)
	}
	return fmt.Errorf("etcd %s: %w", eps, err)
}

// unreachable reports whether err is no answer from any endpoint.
func unreachable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded || status.Code(err) == codes.Unavailable
}

// retryDial is how long a waiting crontab pauses between two tries.
const retryDial = time.Second

// waitForEtcd dials etcd until it answers, for a crontab that may start
// before etcd does: each try that gets no answer within timeout is logged
// as an error, and the next follows. A refusal (credentials, permissions)
// is returned at once, as waiting does not cure it. It returns ctx's error
// when ctx ends first.
func waitForEtcd(ctx context.Context, cfg convox.Config, timeout time.Duration, logger *slog.Logger) (*clientv3.Client, error) {
	for {
		cli, err := dial(ctx, cfg, timeout, readWrite)
		switch {
		case err == nil:
			return cli, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, errRefused):
			return nil, err
		}
		logger.Error("baton crontab: waiting for etcd; no job runs until it answers", "err", err)
		t := time.NewTimer(retryDial)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
