//go:build !faults

package clock

import "testing"

// TestReleaseBuildIgnoresTheFaultsOffset: only a binary built for the fault
// harness may be told to skew its clock.
func TestReleaseBuildIgnoresTheFaultsOffset(t *testing.T) {
	t.Setenv(OffsetVar, "1h")
	if c := Process(); c != Real {
		t.Fatalf("Process() = %#v with %s set, want the real clock", c, OffsetVar)
	}
}
