package cronx

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
)

// TestOutcomeOutlivesTheHistory: a job that last succeeded 200 runs ago
// still shows when, with its 200 failures in a row and the last of them,
// although its history keeps 10 runs; a retried attempt counts for
// nothing; a success counts the failures from 0 again. Runs are recorded
// one by one and in batches, the two ways a recorder writes, and each
// record tells the observers the outcome it wrote.
func TestOutcomeOutlivesTheHistory(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	prefix := srv.BatonPrefix("/baton")
	told := make(chan JobOutcome, 512)
	sc := &scope{name: "outcome", identity: "web-1", keys: jobkeys.New(prefix, "outcome"), logger: testLogger{t, "web-1"}}
	co := &coordinator{scope: sc, writes: writes{sc}, conn: &connection{sc: sc, client: cli},
		rep: &reporter{sc: sc, obs: observers{newObserverQueue(Observer{OnJobOutcome: func(o JobOutcome) { told <- o }})}}}
	rc := newRecorder(co, &runs{})
	base := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	end := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	run := func(job string, i int, err error) finishItem {
		return finishItem{job: job, tick: end(i), start: end(i), end: end(i), err: err}
	}
	ctx := context.Background()
	rc.appendHistory(ctx, run("nightly", 0, nil))
	for i := 1; i <= 200; i++ {
		rc.appendHistory(ctx, run("nightly", i, fmt.Errorf("exit status %d", i)))
	}
	retried := run("nightly", 201, errors.New("attempt 1"))
	retried.keep = true
	rc.appendHistory(ctx, retried)
	// A batch: the job's next failure beside another job's success.
	rc.recordAll([]finishItem{run("nightly", 202, errors.New("exit status 202")), run("minutely", 202, nil)})

	k, err := NewControl(cli, prefix, "outcome")
	if err != nil {
		t.Fatal(err)
	}
	st, err := k.status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]JobStatus{}
	for _, j := range st.Jobs {
		got[j.Name] = j
	}
	n := got["nightly"]
	if len(n.History) != historyLen || !n.LastSuccess.Equal(end(0)) || !n.LastFailure.Equal(end(202)) || n.ConsecutiveFailures != 201 {
		t.Errorf("nightly: %d records, last success %v, last failure %v, %d failures in a row; want %d, %v, %v, 201",
			len(n.History), n.LastSuccess, n.LastFailure, n.ConsecutiveFailures, historyLen, end(0), end(202))
	}
	if m := got["minutely"]; !m.LastSuccess.Equal(end(202)) || !m.LastFailure.IsZero() || m.ConsecutiveFailures != 0 {
		t.Errorf("minutely: last success %v, last failure %v, %d failures; want %v, none, 0", m.LastSuccess, m.LastFailure, m.ConsecutiveFailures, end(202))
	}

	rc.appendHistory(ctx, run("nightly", 203, nil))
	st, err = k.status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range st.Jobs {
		if j.Name == "nightly" && (!j.LastSuccess.Equal(end(203)) || !j.LastFailure.Equal(end(202)) || j.ConsecutiveFailures != 0) {
			t.Errorf("after a success: last success %v, last failure %v, %d failures; want %v, %v, 0", j.LastSuccess, j.LastFailure, j.ConsecutiveFailures, end(203), end(202))
		}
	}

	// Told once per run recorded (the retried attempt is none), the last
	// as etcd has it.
	var last JobOutcome
	for i := 0; i < 1+200+2+1; i++ {
		select {
		case o := <-told:
			if o.Job == "nightly" {
				last = o
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d outcomes told within 10s, want %d", i, 1+200+2+1)
		}
	}
	if last.Scheduler != "outcome" || !last.LastSuccess.Equal(end(203)) || last.ConsecutiveFailures != 0 {
		t.Errorf("last told %+v", last)
	}
}

// TestOutcomeToldAtStart: a replica that starts tells its observers the
// outcomes etcd has of its jobs, recorded by another replica before it
// started, and of a job added while it runs; a job never run is not told.
func TestOutcomeToldAtStart(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := context.Background()
	first := New(WithEtcd(cli), WithName("told"), WithElection(election.WithIdentity("a")), WithLogger(testLogger{t, "a"}))
	for _, job := range []string{"report", "sweep"} {
		mustAdd(t, first, "@yearly", Named(job, ContextFunc(func(context.Context) error { return nil })))
	}
	mustAdd(t, first, "@yearly", Named("idle", FuncJob(func() {})))
	first.Start()
	var recorded JobStatus
	deadline := time.Now().Add(15 * time.Second)
	for _, job := range []string{"report", "sweep"} {
		for {
			if err := first.Trigger(ctx, job); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for {
		st, err := first.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, j := range st.Jobs {
			if !j.LastSuccess.IsZero() {
				n++
				recorded = j
			}
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the triggered runs not recorded within 15s: %+v", st.Jobs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	shutdown(t, first, "a")

	told := make(chan JobOutcome, 8)
	second := New(WithEtcd(cli), WithName("told"), WithElection(election.WithIdentity("b")), WithLogger(testLogger{t, "b"}),
		WithObserver(Observer{OnJobOutcome: func(o JobOutcome) { told <- o }}))
	mustAdd(t, second, "@yearly", Named(recorded.Name, FuncJob(func() {})))
	mustAdd(t, second, "@yearly", Named("idle", FuncJob(func() {})))
	second.Start()
	defer shutdown(t, second, "b")
	other := "report"
	if recorded.Name == "report" {
		other = "sweep"
	}
	for _, want := range []string{recorded.Name, other} {
		select {
		case o := <-told:
			if o.Job != want || o.Scheduler != "told" || o.LastSuccess.IsZero() || o.ConsecutiveFailures != 0 {
				t.Errorf("told %+v, want the success of %s", o, want)
			}
			if o.Job == recorded.Name && !o.LastSuccess.Equal(recorded.LastSuccess) {
				t.Errorf("told %s's last success %v, want %v", o.Job, o.LastSuccess, recorded.LastSuccess)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's outcome not told within 10s", want)
		}
		if want == recorded.Name {
			mustAdd(t, second, "@yearly", Named(other, FuncJob(func() {})))
		}
	}
	select {
	case o := <-told:
		t.Errorf("told %+v", o)
	case <-time.After(200 * time.Millisecond):
	}
}
