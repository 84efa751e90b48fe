package cronx

import (
	"errors"
	"testing"
)

// TestCopiesTakeTheLowestFreeNumber: a copy of an unnamed job gets the
// lowest copy number no copy holds, whatever was removed before, so
// replicas that hold the same jobs name them alike.
func TestCopiesTakeTheLowestFreeNumber(t *testing.T) {
	t.Parallel()
	var n jobNames
	take := func(want string) {
		t.Helper()
		got, err := n.take("", "f-1a2b3c4d")
		if err != nil || got != want {
			t.Fatalf("take: %q, %v; want %q", got, err, want)
		}
	}
	take("f-1a2b3c4d")
	take("f-1a2b3c4d-2")
	take("f-1a2b3c4d-3")
	n.release("f-1a2b3c4d-2")
	take("f-1a2b3c4d-2")
	take("f-1a2b3c4d-4")
	n.release("f-1a2b3c4d-3")
	n.release("f-1a2b3c4d")
	take("f-1a2b3c4d")
	take("f-1a2b3c4d-3")
	take("f-1a2b3c4d-5")

	// A Named job that holds a copy's name stops the numbering there.
	if _, err := n.take("f-1a2b3c4d-6", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := n.take("", "f-1a2b3c4d"); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("the copy whose name a Named job holds: %v, want ErrDuplicateName", err)
	}
	n.release("f-1a2b3c4d-2")
	take("f-1a2b3c4d-2")
}

// BenchmarkCopiesOfOneJob adds b.N copies of one function on one spec:
// each add costs the same, however many copies there are.
func BenchmarkCopiesOfOneJob(b *testing.B) {
	var n jobNames
	for b.Loop() {
		if _, err := n.take("", "f-1a2b3c4d"); err != nil {
			b.Fatal(err)
		}
	}
}
