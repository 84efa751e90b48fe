package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// A member still waiting for its peers says so after etcdWaitNotice, then
// at doubling intervals up to etcdWaitNoticeMax.
const (
	etcdWaitNotice    = 10 * time.Second
	etcdWaitNoticeMax = 5 * time.Minute
)

// authReady is serveEtcd's result when a private start has set up auth and
// stopped; it is never an exit status.
const authReady = -1

// serveEtcd runs the member until a signal, ctx's end or a fatal error.
// A signal is honoured at every stage, the start included. A private start
// (see needsPrivateStart) stops once auth is on and returns authReady.
func serveEtcd(ctx context.Context, env *environ, cfg *embed.Config, st *memberState, users []etcdUser, private bool) int {
	st.started.Store(false)
	st.stopping.Store(false)
	type started struct {
		e   *embed.Etcd
		err error
	}
	startc := make(chan started, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				startc <- started{err: fmt.Errorf("%v", r)}
			}
		}()
		e, err := embed.StartEtcd(cfg)
		startc <- started{e, err}
	}()
	var e *embed.Etcd
	select {
	case s := <-startc:
		if s.err != nil {
			return fail(env, "etcd", fmt.Errorf("member %s, data dir %s: %w", cfg.Name, cfg.Dir, s.err))
		}
		e = s.e
		st.started.Store(true)
	case sig := <-env.signals:
		fmt.Fprintf(env.stderr, "baton etcd: member %s stopped while starting (%v)\n", cfg.Name, sig)
		return exitOK
	case <-ctx.Done():
		return exitOK
	}
	clients := urlStrings(cfg.AdvertiseClientUrls)
	fmt.Fprintf(env.stderr, "baton etcd: member %s starting, data in %s, initial cluster %s\n", cfg.Name, cfg.Dir, cfg.InitialCluster)
	every := etcdWaitNotice
	notice := time.NewTimer(every)
	defer notice.Stop()
	ready := false
	readyc := e.Server.ReadyNotify()
	var authc chan error
	for {
		select {
		case <-readyc:
			ready, readyc = true, nil
			notice.Stop()
			authc = make(chan error, 1)
			go func() {
				err := applyAuth(ctx, env, e, users)
				if err == nil && private {
					if err = waitAuthOn(ctx, e.Server.AuthStore().IsAuthEnabled); err == nil {
						err = errBootstrapped
					}
				}
				if (err == nil || err == errBootstrapped) && len(users) > 0 {
					if merr := markAuthOn(cfg.Dir); merr != nil {
						err = fmt.Errorf("data dir %s: %w", cfg.Dir, merr)
					}
				}
				authc <- err
			}()
		case err := <-authc:
			authc = nil
			if err == errBootstrapped {
				// Every member restarts now: no leadership to hand over,
				// and the ports must be free before the restart binds them.
				st.stopping.Store(true)
				e.Server.HardStop()
				e.Close()
				return authReady
			}
			if err != nil {
				st.stopping.Store(true)
				e.Server.HardStop()
				e.Close()
				return fail(env, "etcd", fmt.Errorf("member %s: %w", cfg.Name, err))
			}
			fmt.Fprintf(env.stdout, "baton etcd: member %s ready, clients at %s\n", cfg.Name, clients)
		case <-notice.C:
			fmt.Fprintf(env.stderr, "baton etcd: member %s still waiting for its peers (%s)\n", cfg.Name, cfg.InitialCluster)
			every = min(2*every, etcdWaitNoticeMax)
			notice.Reset(every)
		case err, ok := <-e.Err():
			if !ok {
				err = fmt.Errorf("stopped")
			}
			st.stopping.Store(true)
			e.Server.HardStop()
			e.Close()
			return fail(env, "etcd", fmt.Errorf("member %s: %w", cfg.Name, err))
		case sig := <-env.signals:
			fmt.Fprintf(env.stderr, "baton etcd: member %s stopping (%v)\n", cfg.Name, sig)
			return stopEtcd(env, e, ready, &st.stopping)
		case <-ctx.Done():
			return stopEtcd(env, e, ready, &st.stopping)
		}
	}
}

// etcdStopGrace bounds a graceful stop. A raft leader hands its leadership
// to a peer first, which etcd gives up on only after seven seconds when the
// peers are stopping too, as in a deploy of every member at once.
const etcdStopGrace = 4 * time.Second

// stopEtcd closes the member, a raft leader handing its leadership over
// first, and stops it at once past etcdStopGrace or on a second signal:
// whatever was committed is on disk either way.
func stopEtcd(env *environ, e *embed.Etcd, ready bool, stopping *atomic.Bool) int {
	stopping.Store(true)
	name := e.Config().Name
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !ready {
			// Nothing to hand over; do not wait on a cluster that never formed.
			e.Server.HardStop()
		}
		e.Close()
	}()
	grace := time.NewTimer(etcdStopGrace)
	defer grace.Stop()
	select {
	case <-done:
		fmt.Fprintf(env.stderr, "baton etcd: member %s stopped\n", name)
		return exitOK
	case <-grace.C:
		e.Server.HardStop()
		fmt.Fprintf(env.stderr, "baton etcd: member %s stopped; no peer took its leadership within %v\n", name, etcdStopGrace)
		return exitOK
	case sig := <-env.signals:
		e.Server.HardStop()
		fmt.Fprintf(env.stderr, "baton etcd: member %s stopped at once (%v)\n", name, sig)
		return exitFailure
	}
}

func urlStrings(us []url.URL) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = u.String()
	}
	return strings.Join(s, ",")
}
