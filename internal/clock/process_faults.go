//go:build faults

package clock

import (
	"os"
	"time"
)

// Process is the clock a new scheduler uses: the real one shifted by
// $BATON_FAULTS_CLOCK_OFFSET (a duration), so one machine can run replicas
// whose clocks disagree.
func Process() Clock {
	d, err := time.ParseDuration(os.Getenv(OffsetVar))
	if err != nil {
		return Real
	}
	return Offset(d)
}
