package cronx

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestNamedNilInsideNamedIsAnError: a Named job around a Named nil job, or
// a Named nil func, at any depth, is refused by AddJob and Schedule with an
// error naming the job, alone and coordinated, where it used to be added and
// crash the program at its first run.
func TestNamedNilInsideNamedIsAnError(t *testing.T) {
	t.Parallel()
	cli := etcdtest.NewClient(t, closedEndpoint(t)) // never dialled: the check comes first
	jobs := []struct {
		name string
		job  Job
		want []string
	}{
		{"named nil", Named("a", Named("b", nil)), []string{`"a"`, `"b"`}},
		{"named nil func", Named("a", Named("b", FuncJob(nil))), []string{`"a"`, `"b"`}},
		{"named nil context func", Named("a", Named("b", Named("c", ContextFunc(nil)))), []string{`"a"`, `"c"`}},
	}
	for _, coordinated := range []bool{false, true} {
		for _, tc := range jobs {
			name := tc.name
			var opts []Option
			if coordinated {
				name += ", coordinated"
				opts = []Option{WithEtcd(cli), WithName("nilnamed")}
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				logs := &logLines{}
				c := New(append(opts, WithLogger(logs))...)
				var err error
				var id EntryID
				noPanic(t, func() {
					_, err = c.AddJob("@every 1m", tc.job)
					id = c.Schedule(Every(time.Minute), tc.job)
				})
				for _, want := range tc.want {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("AddJob = %v, want an error naming %s", err, want)
					}
					if lines := logs.matching(want); len(lines) != 1 {
						t.Errorf("Schedule logged %q, want one error naming %s", logs.lines, want)
					}
				}
				if id != 0 || len(c.Entries()) != 0 {
					t.Errorf("Schedule returned %d with %d entries, want 0 and none", id, len(c.Entries()))
				}
			})
		}
	}
}

// noPanic runs f and fails the test if it panics.
func noPanic(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic: %v", p)
		}
	}()
	f()
}
