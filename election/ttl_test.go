package election

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

func TestParseTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"10", 10 * time.Second, ""},
		{" 10 ", 10 * time.Second, ""},
		{"10s", 10 * time.Second, ""},
		{"1m", time.Minute, ""},
		{"9000000000", MaxTTL, ""},
		{"0", 0, "1 to 9000000000"},
		{"0s", 0, "at least 1s"},
		{"-5s", 0, "at least 1s"},
		{"1500ms", 0, "whole number"},
		{"9000000001", 0, "longest lease"},
		{"99999999999999999999", 0, "longest lease"},
		{"2500000h", MaxTTL, ""},
		{"2500001h", 0, "longest lease"},
		{"soon", 0, `"soon"`},
	} {
		got, err := ParseTTL(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseTTL(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseTTL(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		}
	}
}

// TestEnvironmentTTLTakesADuration sets BATON_TTL=3s, as the baton command's
// --ttl takes it: the session's lease has a TTL of 3 seconds.
func TestEnvironmentTTLTakesADuration(t *testing.T) {
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	t.Setenv("BATON_TTL", "3s")
	s, err := NewSession(deadlineCtx(t, 5*time.Second), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(deadlineCtx(t, 5*time.Second))
	resp, err := cli.TimeToLive(deadlineCtx(t, 5*time.Second), s.Lease())
	if err != nil || resp.GrantedTTL != 3 {
		t.Fatalf("granted TTL %+v, %v; want 3", resp, err)
	}
}
