//go:build !faults

package clock

// Process is the clock a new scheduler uses: the real one. A binary built
// with the "faults" tag, for the fault-injection harness only, may skew it
// (see process_faults.go).
func Process() Clock { return Real }
