package election

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestOnceClaim walks a key through its life: a claim excludes others while
// it is held; a released claim frees the key at
// once; a recorded success excludes others for the window, and no longer.
func TestOnceClaim(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	// Sessions and a window longer than a pause of the test process, which
	// runs etcd: a lease lapsed in a pause would free the key early.
	const ttl, window = 10 * time.Second, 6 * time.Second
	opts := []Option{WithTTL(ttl), WithIdentity("a")}
	claim := func(window time.Duration, id string) (*Once, error) {
		return ClaimOnce(deadlineCtx(t, 5*time.Second), cli, "nightly", window, WithTTL(ttl), WithIdentity(id))
	}
	a, err := ClaimOnce(deadlineCtx(t, 5*time.Second), cli, "nightly", time.Second, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var oe *OnceError
	if _, err := claim(time.Second, "b"); !errors.Is(err, ErrBusy) || !errors.As(err, &oe) || oe.By != "a" {
		t.Fatalf("a second claim while the first runs: %v", err)
	}
	if err := a.Release(deadlineCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if a.Context().Err() == nil {
		t.Error("a released claim's context is not done")
	}
	b, err := claim(window, "b")
	if err != nil {
		t.Fatalf("a claim after a release: %v", err)
	}
	if b.Fence().Revision <= 0 || !strings.HasSuffix(b.Fence().Key, "/once/nightly/running") {
		t.Errorf("fence %v", b.Fence())
	}
	if err := b.Succeeded(deadlineCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(time.Second, "c"); !errors.Is(err, ErrDone) || !errors.As(err, &oe) || oe.By != "b" {
		t.Fatalf("a claim within the window of a success: %v", err)
	}
	deadline := time.Now().Add(window + 10*time.Second)
	for {
		c, err := claim(time.Second, "c")
		if err == nil {
			c.Release(deadlineCtx(t, 5*time.Second))
			break
		}
		if !errors.Is(err, ErrDone) || time.Now().After(deadline) {
			t.Fatalf("the key is still done %v after a success with a %v window: %v", window+10*time.Second, window, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOnceClaimEndsWhenItsMarkerIsDeleted deletes a running claim's marker
// (etcdctl del): the key is free for the next caller, so the claim's context
// ends, and its success is not recorded.
func TestOnceClaimEndsWhenItsMarkerIsDeleted(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	c, err := ClaimOnce(deadlineCtx(t, 5*time.Second), cli, "marker", time.Minute, WithTTL(10*time.Second), WithIdentity("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(deadlineCtx(t, 5*time.Second), c.Fence().Key); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c.Context().Done(), 5*time.Second, "the claim's context to end after its marker was deleted")
	if cause := context.Cause(c.Context()); !errors.Is(cause, ErrClaimLost) || !strings.Contains(cause.Error(), "/once/marker/running") {
		t.Fatalf("cause = %v, want ErrClaimLost naming the marker", cause)
	}
	if err := c.Succeeded(deadlineCtx(t, 5*time.Second)); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("Succeeded after the loss: %v, want ErrClaimLost", err)
	}
}

// TestOnceClaimSucceededIsNoLoss: a success deletes the marker too, and the
// claim's context then ends as closed, not lost.
func TestOnceClaimSucceededIsNoLoss(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	c, err := ClaimOnce(deadlineCtx(t, 5*time.Second), cli, "ok", time.Minute, WithTTL(10*time.Second), WithIdentity("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Succeeded(deadlineCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(c.Context()); !errors.Is(cause, ErrSessionClosed) {
		t.Fatalf("cause after Succeeded = %v, want ErrSessionClosed", cause)
	}
}

func TestOnceClaimBadInput(t *testing.T) {
	t.Parallel()
	cli := etcdtest.NewClient(t, closedEndpoint(t)) // never dialled: validation comes first
	for _, tc := range []struct {
		key    string
		window time.Duration
		want   string
	}{
		{"", time.Hour, "empty"},
		{"a/b", time.Hour, `"a/b"`},
		{"a b", time.Hour, `"a b"`},
		{"ok", 0, "window"},
		{"ok", 1500 * time.Millisecond, "window"},
		{"ok", MaxTTL + time.Second, "window"},
	} {
		_, err := ClaimOnce(deadlineCtx(t, time.Second), cli, tc.key, tc.window)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ClaimOnce(%q, %v) = %v, want an error with %q", tc.key, tc.window, err, tc.want)
		}
	}
}
