package leasepool

import "testing"

// TestALeaseTakesKeysWhileEveryPutChecksFewerThanOpen: a transaction's
// keys join a lease only if each of their puts, and each put of a
// transaction sent on the lease before and not yet answered, would find
// fewer than open keys on it, in whichever order the transactions commit.
func TestALeaseTakesKeysWhileEveryPutChecksFewerThanOpen(t *testing.T) {
	for _, c := range []struct {
		name    string
		keys    int   // held or reserved
		sent    []int // transactions sent and not answered
		open, n int
		fits    bool
		why     string
	}{
		{name: "empty", keys: 0, open: 16, n: 100, fits: true},
		{name: "a few answered", keys: 15, open: 16, n: 100, fits: true, why: "its puts find 15 keys, fewer than 16"},
		{name: "full", keys: 16, open: 16, n: 1, why: "its puts would find 16 keys"},
		{name: "a small batch on the wire", keys: 3, sent: []int{3}, open: 16, n: 100, why: "the 3 sent before may commit after it, and find its 100"},
		{name: "small batches on the wire", keys: 7, sent: []int{3, 4}, open: 16, n: 5, fits: true},
		{name: "small batches filling it", keys: 7, sent: []int{3, 4}, open: 16, n: 12, why: "the 3 sent before would find 4 and 12 beside them, 16"},
		{name: "registrations on a lease that held none", keys: 0, open: 1, n: 4000, fits: true},
		{name: "registrations on a lease that holds some", keys: 1, open: 1, n: 1, why: "a term's registrations go on a lease that holds none"},
	} {
		l := &lease{keys: c.keys, sent: c.sent}
		if got := l.fits(c.open, c.n); got != c.fits {
			t.Errorf("%s: %d keys more on a lease of %d keys with %v sent fit = %v, want %v (%s)", c.name, c.n, c.keys, c.sent, got, c.fits, c.why)
		}
	}
}

// TestKeysPutInATransactionAreTrackedUntilItLands: only a transaction of
// markers is tracked as sent, and only keys it puts.
func TestKeysPutInATransactionAreTrackedUntilItLands(t *testing.T) {
	l := &lease{}
	l.add(3, true)
	l.add(5, false)
	l.add(0, true)
	if l.keys != 8 || len(l.sent) != 1 || l.sent[0] != 3 {
		t.Errorf("after 3 keys sent, 5 not and none sent: %d keys, %v sent; want 8 keys, [3] sent", l.keys, l.sent)
	}
}
