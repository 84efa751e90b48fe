package claims

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Release deletes a claim's marker while it is still the claim's own.
func Release(ctx context.Context, client *clientv3.Client, c election.Claim) error {
	if c.Fence.Key == "" {
		return nil
	}
	_, err := client.Txn(ctx).If(c.Fence.Cmp()).Then(clientv3.OpDelete(c.Fence.Key)).Commit()
	if err != nil {
		return fmt.Errorf("election: release %s: %w", c.Fence.Key, err)
	}
	return nil
}

// ErrNotWithdrawn means a claim could not be withdrawn: a later claim
// replaced it, or it was never made.
var ErrNotWithdrawn = errors.New("election: claim already superseded")

// Withdraw gives back claim c at key, made and not acted on: while key still
// holds c, it sets key back to prev (claimed by holder) and deletes c's
// marker, in one transaction, so the sequence can be claimed again, for
// example by a successor. It returns ErrNotWithdrawn once another claim has
// replaced c.
func Withdraw(ctx context.Context, client *clientv3.Client, key string, c election.Claim, prev int64, holder string) error {
	if prev < 0 || prev >= c.Seq {
		return fmt.Errorf("election: withdraw %s: previous sequence %d not below the claim's %d", key, prev, c.Seq)
	}
	then := []clientv3.Op{clientv3.OpPut(key, claimcond.Value(prev, holder))}
	if c.Fence.Key != "" {
		then = append(then, clientv3.OpDelete(c.Fence.Key))
	}
	resp, err := client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", c.Revision)).Then(then...).Commit()
	if err != nil {
		return fmt.Errorf("election: withdraw %s: %w", key, err)
	}
	if !resp.Succeeded {
		return ErrNotWithdrawn
	}
	return nil
}
