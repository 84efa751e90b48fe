package cronx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Keys under P/jobs/ that no Cron or Control could have written (etcdctl
// puts them anywhere) are strays: one whose scheduler or job name is not a
// valid name (a space, a '<'), or that lies in no scheduler's or job's
// directory. Readers of the status skip them and name them, so that one
// stray key never takes down the status of a whole prefix; a job's keys
// whose leaf no version of cronx knows are a job's all the same, and the
// scheduler's own keys (.trigger/...) are no strays.

// IgnoredKey is a stray key, or the stray keys of one name that is not
// valid, skipped by ListSchedulers and Status.
type IgnoredKey struct {
	// Key is the key when Keys is 1; when it is more, the directory of the
	// name that holds them, ending in '/' ("/baton/jobs/my scheduler/").
	Key  string
	Keys int
	// Why is what makes it no key of a scheduler or a job.
	Why string
	dir string // the directory of the invalid name; "" for a key of none
}

// ignore adds key to list: to the last entry when that is of the same
// invalid name's directory dir ("" for none). Keys come sorted, so a
// directory's are together.
func ignore(list []IgnoredKey, key, dir, why string) []IgnoredKey {
	if n := len(list); n > 0 && dir != "" && list[n-1].dir == dir {
		list[n-1].Key = dir
		list[n-1].Keys++
		return list
	}
	return append(list, IgnoredKey{Key: key, Keys: 1, Why: why, dir: dir})
}

// Schedulers returns the names of the schedulers that have keys under the
// key prefix P (BATON_PREFIX, default "/baton", when prefix is empty),
// sorted: those whose replicas published jobs, paused one or ran one. Keys
// that name no valid scheduler are left out (ListSchedulers names them).
// One read of keys only.
func Schedulers(ctx context.Context, client *clientv3.Client, prefix string) ([]string, error) {
	names, _, err := ListSchedulers(ctx, client, prefix)
	return names, err
}

// ListSchedulers is Schedulers, with the keys under P/jobs/ that it left
// out because they name no valid scheduler, in key order. One read of keys
// only.
func ListSchedulers(ctx context.Context, client *clientv3.Client, prefix string) ([]string, []IgnoredKey, error) {
	if client == nil {
		return nil, nil, errors.New("cronx: Schedulers: nil etcd client")
	}
	if prefix == "" {
		s, err := election.Resolve()
		if err != nil {
			return nil, nil, err
		}
		prefix = s.Prefix
	}
	dir := jobkeys.SchedulersDir(prefix)
	resp, err := client.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, nil, fmt.Errorf("cronx: read %s: %w", dir, err)
	}
	var names []string
	var ignored []IgnoredKey
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		name, _, ok := strings.Cut(strings.TrimPrefix(key, dir), "/")
		if !ok {
			ignored = ignore(ignored, key, "", "in no scheduler's directory")
			continue
		}
		if n := len(names); n > 0 && names[n-1] == name {
			continue // keys come sorted: a scheduler's are together
		}
		if err := election.CheckName("scheduler", name); err != nil {
			ignored = ignore(ignored, key, dir+name+"/", err.Error())
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names) // "a-b/" is before "a/" in etcd's order
	return names, ignored, nil
}
