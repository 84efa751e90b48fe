package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestASchedulerAndARunLeaderOfOneNameAreTold: `baton run --leader NAME`
// where a scheduler named NAME runs is refused at once, naming the name;
// a scheduler whose election a `run --leader` of its name leads already
// logs an error naming the election.
func TestASchedulerAndARunLeaderOfOneNameAreTold(t *testing.T) {
	t.Parallel()
	tab := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(tab, []byte("tick: * * * * * * true\n"), 0o644)

	t.Run("scheduler first", func(t *testing.T) {
		t.Parallel()
		etcd := etcdtest.Shared(t)
		s := startBaton(t, etcd.Env(), "crontab", "--seconds", "--name", "shared", tab)
		s.waitOutput("cronx: leading", 20*time.Second)
		p := startBaton(t, etcd.Env(), "run", "--leader", "shared", "--", "true")
		code := p.wait(20 * time.Second)
		if out := p.out.String(); code != runFailure || !strings.Contains(out, `a scheduler named "shared"`) || !strings.Contains(out, "/election/shared") {
			t.Errorf("run --leader shared beside a scheduler named shared: exit %d, want %d and the name:\n%s", code, runFailure, out)
		}
	})
	t.Run("run --leader first", func(t *testing.T) {
		t.Parallel()
		etcd := etcdtest.Shared(t)
		r := startBaton(t, etcd.Env(), "run", "--leader", "other", "--", "sleep", "60")
		cli := etcd.Client(t)
		until(t, 20*time.Second, "run --leader to lead", func() bool { return electionKeys(t, cli, "other") > 0 })
		s := startBaton(t, etcd.Env(), "crontab", "--seconds", "--name", "other", tab)
		s.waitOutput("runs no job of it, a `baton run --leader other` most likely", 40*time.Second)
		select {
		case <-r.done:
			t.Errorf("run --leader other exited %d:\n%s", r.status, r.out.String())
		default:
		}
	})
}

// TestSchedulerReplicasAreNotTakenForARunLeader: two replicas of one
// crontab share their election and say nothing of it.
func TestSchedulerReplicasAreNotTakenForARunLeader(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	tab := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(tab, []byte("tick: * * * * * * true\n"), 0o644)
	a := startBaton(t, etcd.Env(), "crontab", "--seconds", "--name", "pair", tab)
	a.waitOutput("cronx: leading", 20*time.Second)
	b := startBaton(t, etcd.Env(), "crontab", "--seconds", "--name", "pair", tab)
	b.waitOutput("baton crontab: started", 20*time.Second)
	// Three looks of each replica's watch, the first two enough to speak.
	time.Sleep(3*sharingCheckEvery + time.Second)
	for _, p := range []*process{a, b} {
		if strings.Contains(p.out.String(), "runs no job of it") {
			t.Errorf("a replica of the scheduler took its peer for a run --leader:\n%s", p.out.String())
		}
	}
}
