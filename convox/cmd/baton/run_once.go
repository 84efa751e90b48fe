package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// claimTimeout bounds the claim of a --once key and the record of its
// success, once etcd has answered.
const claimTimeout = 10 * time.Second

// once runs the command if it can claim key: no run of key succeeded within
// window and none runs now. The claim is held by a session while the
// command runs; only a success is recorded, for window.
func (r runner) once(ctx context.Context, cli *clientv3.Client, key string, window time.Duration, opts []election.Option) int {
	cctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	c, err := election.ClaimOnce(cctx, cli, key, window, append(opts, election.WithIdentity(r.identity))...)
	var oe *election.OnceError
	switch {
	case errors.As(err, &oe) && errors.Is(err, election.ErrDone):
		fmt.Fprintf(r.env.stderr, "baton run: %q succeeded at %s (by %s), within %v; not running\n",
			key, oe.At.Format(time.RFC3339), oe.By, window)
		return exitOK
	case errors.As(err, &oe) && errors.Is(err, election.ErrBusy):
		fmt.Fprintf(r.env.stderr, "baton run: %q runs since %s (by %s); not running\n",
			key, oe.At.Format(time.RFC3339), oe.By)
		return exitOK
	case err != nil:
		return r.fail(fmt.Errorf("claim %q: %w", key, err))
	}
	fmt.Fprintf(r.env.stderr, "baton run: claimed %q (fence %d); starting %s\n", key, c.Fence().Revision, r.argv[0])
	code, how := r.exec(c.Context(), c.Fence())
	dctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	switch {
	case how == lost:
		// etcd is likely out of reach and the lease expiring: give back
		// what can be given at once, and do not wait for it.
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Release(rctx)
		return runLost
	case code != 0:
		// A failed run leaves the key free, so a retry runs the work.
		if err := c.Release(dctx); err != nil {
			fmt.Fprintf(r.env.stderr, "baton run: %s failed; %q is freed when its session expires: %v\n", r.argv[0], key, err)
		}
		return code
	}
	if err := c.Succeeded(dctx); err != nil {
		return r.fail(fmt.Errorf("%s succeeded, but its success could not be recorded, so a retry runs it again: %w", r.argv[0], err))
	}
	fmt.Fprintf(r.env.stderr, "baton run: %s succeeded; %q is done for %v\n", r.argv[0], key, window)
	return exitOK
}
