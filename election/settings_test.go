package election

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestResolveOrder: an option wins over the environment, which wins over
// the defaults, and a bad value is an error naming where it came from.
func TestResolveOrder(t *testing.T) {
	t.Setenv("HOSTNAME", "web-1")
	t.Setenv("BATON_ID", "")
	t.Setenv("BATON_PREFIX", "")
	t.Setenv("BATON_TTL", "")
	s, err := Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if want := (Settings{Prefix: DefaultPrefix, Identity: fmt.Sprintf("web-1/%d", os.Getpid()), TTL: DefaultTTL}); s != want {
		t.Errorf("defaults: %+v, want %+v", s, want)
	}
	t.Setenv("BATON_ID", "env-id")
	t.Setenv("BATON_PREFIX", "/env")
	t.Setenv("BATON_TTL", "7s")
	if s, _ = Resolve(); s != (Settings{Prefix: "/env", Identity: "env-id", TTL: 7 * time.Second}) {
		t.Errorf("environment: %+v", s)
	}
	if s, _ = Resolve(WithPrefix("/opt"), WithIdentity("opt-id"), WithTTL(3*time.Second)); s != (Settings{Prefix: "/opt", Identity: "opt-id", TTL: 3 * time.Second}) {
		t.Errorf("options: %+v", s)
	}
	t.Setenv("BATON_TTL", "ten")
	if _, err := Resolve(); err == nil || !strings.Contains(err.Error(), "BATON_TTL") {
		t.Errorf("a bad BATON_TTL: %v, want an error naming it", err)
	}
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
	}{
		{"report", ""},
		{"nightly.report_v2-a", ""},
		{"", "job name is empty"},
		{"-x", `job name "-x": use letters`},
		{"a/b", `job name "a/b": use letters`},
		{"a b", `job name "a b": use letters`},
		{"räport", `job name "räport": use letters`},
		{strings.Repeat("a", 201), "longer than 200 bytes"},
	} {
		err := CheckName("job", tc.name)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckName(%q) = %v, want %q", tc.name, err, tc.want)
		}
	}
}
