package cronx

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Schedulers returns the names of the schedulers that have keys under the
// key prefix P (BATON_PREFIX, default "/baton", when prefix is empty),
// sorted: those whose replicas published jobs, paused one or ran one. Keys
// that name no valid scheduler are left out (ListSchedulers names them).
// One read of keys only.
func Schedulers(ctx context.Context, client *clientv3.Client, prefix string) ([]string, error) {
	names, _, err := ListSchedulers(ctx, client, prefix)
	return names, err
}

// Jobs returns the names of the scheduler's jobs that a live replica
// registers, sorted (see Status). One read of keys only.
func (k *Control) Jobs(ctx context.Context) ([]string, error) {
	resp, err := k.client.Get(ctx, k.keys.Dir(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("cronx: read %s: %w", k.keys.Dir(), err)
	}
	var jobs []string
	for _, kv := range resp.Kvs {
		if job, leaf, ok := k.keys.JobKey(string(kv.Key)); ok && strings.HasPrefix(leaf, "by/") && (len(jobs) == 0 || jobs[len(jobs)-1] != job) {
			jobs = append(jobs, job)
		}
	}
	slices.Sort(jobs)
	return jobs, nil
}

// Paused reports whether job is paused, and who paused it as Pause
// recorded it.
func (k *Control) Paused(ctx context.Context, job string) (by string, paused bool, err error) {
	resp, err := k.client.Get(ctx, k.keys.Paused(job))
	if err != nil {
		return "", false, fmt.Errorf("cronx: job %q: %w", job, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	by, _ = jobkeys.ParsePaused(resp.Kvs[0].Value)
	return by, true, nil
}
