//go:build faults

package clock

import (
	"testing"
	"time"
)

// TestFaultsBuildSkewsTheClock: the fault harness's build shifts the clock by
// the offset it is given (go test -tags faults ./internal/clock).
func TestFaultsBuildSkewsTheClock(t *testing.T) {
	t.Setenv(OffsetVar, "1h")
	if d := Process().Now().Sub(time.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("Process() is %v off the real clock, want 1h", d)
	}
}
