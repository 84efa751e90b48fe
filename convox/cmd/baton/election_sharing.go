package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A scheduler (baton crontab, or an app's cronx) named NAME campaigns in
// the election P/election/NAME, as `baton run --leader NAME` does: the two
// would share one leadership, and whichever leads keeps the other out for
// good. baton refuses the run, and a scheduler that finds its election led
// by a candidate that registers no job says so.

// schedulerNamed reports whether a scheduler named name has ever kept jobs
// under prefix (P/jobs/NAME/ holds keys: a job's spec stays there).
func schedulerNamed(ctx context.Context, cli *clientv3.Client, prefix, name string) (bool, error) {
	resp, err := cli.Get(ctx, prefix+"/jobs/"+name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return false, err
	}
	return resp.Count > 0, nil
}

// leaderNameTaken is the error of a `baton run --leader NAME` whose NAME a
// scheduler uses, or nil.
func leaderNameTaken(ctx context.Context, cli *clientv3.Client, prefix, name string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	taken, err := schedulerNamed(ctx, cli, prefix, name)
	if err != nil {
		return fmt.Errorf("--leader %s: look for a scheduler of that name: %w", name, err)
	}
	if taken {
		return fmt.Errorf("--leader %s: a scheduler named %q (baton crontab --name, cronx.WithName) campaigns in the same election, %s/election/%s, and its jobs are under %s/jobs/%s/: the two would share one leadership; give --leader another name", name, name, prefix, name, prefix, name)
	}
	return nil
}

// sharingCheckEvery is how often a scheduler in leader mode looks at who
// leads its election: one read of the first candidate's key, and a read of
// the scheduler's keys whenever that candidate is a new one.
const sharingCheckEvery = 5 * time.Second

// watchElectionSharing logs an error while the election of the scheduler
// name is led, for two looks in a row, by a candidate that registers no
// job of it (no P/jobs/NAME/<job>/by/ key holds its identity): a `baton run --leader
// NAME`, most likely, which keeps every replica of the scheduler from
// leading. It returns when ctx ends.
func watchElectionSharing(ctx context.Context, cli *clientv3.Client, prefix, name string, logger *slog.Logger) {
	t := time.NewTicker(sharingCheckEvery)
	defer t.Stop()
	var fine, suspect, said string // leader keys: registering, not seen registering once, reported
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		key, registers, err := electionLeaderRegisters(ctx, cli, prefix, name, fine)
		switch {
		case err != nil || key == "" || registers:
			if registers {
				fine = key
			}
			suspect = ""
		case key != suspect:
			suspect = key // the leader may be registering its jobs right now
		case key != said:
			said = key
			logger.Error("baton crontab: the scheduler's election is led by a candidate that runs no job of it, a `baton run --leader "+name+"` most likely: no job runs while it leads; give one of them another name (--name, --leader)",
				"election", prefix+"/election/"+name, "leader_key", key)
		}
	}
}

// electionLeaderRegisters returns the fence key of the election's leader
// and whether a job of the scheduler name is registered by the leader's
// identity (a registration, P/jobs/NAME/<job>/by/<lease>, holds its
// replica's identity); known is a key found registering before, not
// looked at again.
func electionLeaderRegisters(ctx context.Context, cli *clientv3.Client, prefix, name, known string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	e, err := election.New(cli, name, election.WithPrefix(prefix))
	if err != nil {
		return "", false, err
	}
	l, err := e.Leader(ctx)
	if err != nil || l.None() {
		return "", false, nil // no leader, or none readable now: nothing to say
	}
	key := l.Fence.Key
	if key == known {
		return key, true, nil
	}
	jobs, err := cli.Get(ctx, prefix+"/jobs/"+name+"/", clientv3.WithPrefix())
	if err != nil {
		return key, false, err
	}
	for _, kv := range jobs.Kvs {
		if strings.Contains(string(kv.Key), "/by/") && string(kv.Value) == l.Identity {
			return key, true, nil
		}
	}
	return key, false, nil
}
