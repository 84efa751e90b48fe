package election

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxTTL is the longest lease etcd grants (its MaxLeaseTTL, 9,000,000,000
// seconds): a TTL above it is refused before anything asks etcd for it.
const MaxTTL = 9_000_000_000 * time.Second

// ParseTTL reads a TTL as BATON_TTL and the baton command take it: whole
// seconds, bare ("10") or as a duration ("10s", "1m"), from 1 s to MaxTTL.
func ParseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 || n > int64(MaxTTL/time.Second) {
			return 0, fmt.Errorf("TTL %q: want 1 to %d seconds (etcd's longest lease)", s, int64(MaxTTL/time.Second))
		}
		return time.Duration(n) * time.Second, nil
	} else if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return 0, fmt.Errorf("TTL %q: want at most %d seconds (etcd's longest lease)", s, int64(MaxTTL/time.Second))
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("TTL %q: want whole seconds (\"10\") or a duration (\"10s\") from 1s to %v (etcd's longest lease)", s, MaxTTL)
	}
	switch {
	case d < time.Second:
		return 0, fmt.Errorf("TTL %q: want at least 1s", s)
	case d%time.Second != 0:
		return 0, fmt.Errorf("TTL %q: want a whole number of seconds", s)
	case d > MaxTTL:
		return 0, fmt.Errorf("TTL %q: want at most %v (etcd's longest lease)", s, MaxTTL)
	}
	return d, nil
}
