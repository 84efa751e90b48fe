package statuspage

import (
	"testing"
	"time"
)

// A spec read from etcd is input: one that robfig/cron's parser panics on (a
// time zone with no schedule after it) gives no next run instead of taking
// the page down.
func TestNextRunOfUnparsableSpec(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	for _, spec := range []string{"TZ=UTC", "CRON_TZ=Europe/Paris", "*/5 * *"} {
		if next := NextRun(spec, time.Time{}, now); !next.IsZero() {
			t.Errorf("NextRun(%q) = %v, want none", spec, next)
		}
	}
	if next, want := NextRun("CRON_TZ=UTC */5 * * * *", time.Time{}, now), now.Add(5*time.Minute); !next.Equal(want) {
		t.Errorf("NextRun of a zoned spec = %v, want %v", next, want)
	}
}
