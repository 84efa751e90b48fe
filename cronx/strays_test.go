package cronx

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestStrayKeysAreNoSchedulerAndNoJob: keys under P/jobs/ that no Cron
// could have written (etcdctl's) are left out of Schedulers, Jobs and
// Status, which name them, each invalid name once with its count of keys;
// a job's keys of a leaf cronx does not know and the scheduler's own keys
// are not named.
func TestStrayKeysAreNoSchedulerAndNoJob(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range []string{
		"/baton/jobs/a/report/spec",
		"/baton/jobs/a/report/by/1", // a live replica has it
		"/baton/jobs/a/report/from-a-later-version",
		"/baton/jobs/a/.trigger/report",
		"/baton/jobs/a/my job/spec",
		"/baton/jobs/a/my job/last",
		"/baton/jobs/a/loose",
		"/baton/jobs/a-b/x/spec", // before a's in etcd's order
		"/baton/jobs/my scheduler/x/spec",
		"/baton/jobs//x/spec",
		"/baton/jobs/stray",
	} {
		if _, err := cli.Put(ctx, k, "@hourly"); err != nil {
			t.Fatal(err)
		}
	}
	names, ignored, err := ListSchedulers(ctx, cli, "/baton")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "a-b"}; !slices.Equal(names, want) {
		t.Errorf("ListSchedulers: %q, want %q", names, want)
	}
	if plain, err := Schedulers(ctx, cli, "/baton"); err != nil || !slices.Equal(plain, names) {
		t.Errorf("Schedulers: %q, %v; want %q", plain, err, names)
	}
	check := func(what string, got, want []IgnoredKey) {
		t.Helper()
		ok := len(got) == len(want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].Key == want[i].Key && got[i].Keys == want[i].Keys && strings.HasPrefix(got[i].Why, want[i].Why)
		}
		if !ok {
			t.Errorf("%s ignored %+v, want %+v", what, got, want)
		}
	}
	check("ListSchedulers", ignored, []IgnoredKey{
		{Key: "/baton/jobs//x/spec", Keys: 1, Why: "scheduler name is empty"},
		{Key: "/baton/jobs/my scheduler/x/spec", Keys: 1, Why: `scheduler name "my scheduler": use letters`},
		{Key: "/baton/jobs/stray", Keys: 1, Why: "in no scheduler's directory"},
	})

	ctl, err := NewControl(cli, "/baton", "a")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := ctl.Jobs(ctx)
	if err != nil || !slices.Equal(jobs, []string{"report"}) {
		t.Errorf("Jobs: %q, %v; want report only", jobs, err)
	}
	st, err := ctl.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].Name != "report" || st.Jobs[0].Spec != "@hourly" {
		t.Errorf("Status jobs %+v, want report only", st.Jobs)
	}
	check("Status", st.Ignored, []IgnoredKey{
		{Key: "/baton/jobs/a/loose", Keys: 1, Why: "in no job's directory"},
		{Key: "/baton/jobs/a/my job/", Keys: 2, Why: `job name "my job": use letters`},
	})

	if _, err := Schedulers(ctx, nil, "/baton"); err == nil || !strings.Contains(err.Error(), "nil etcd client") {
		t.Errorf("Schedulers with a nil client: %v, want an error naming it", err)
	}
}
