package cronx

import (
	"testing"
	"time"
)

// TestObserverPanicsAreTold: each panic of an observer's function is told
// to every observer's OnObserverPanic, its own included, naming the
// function; a panic of OnObserverPanic is told to nobody, so that it
// cannot feed itself.
func TestObserverPanicsAreTold(t *testing.T) {
	t.Parallel()
	told := make(chan ObserverPanic, 8)
	other := make(chan ObserverPanic, 8)
	panicky := Observer{
		OnJobAdded: func(e JobAdded) { panic("added " + e.Job) },
		OnObserverPanic: func(p ObserverPanic) {
			told <- p
			panic("and again")
		},
	}
	c := New(WithObserver(panicky, Observer{OnObserverPanic: func(p ObserverPanic) { other <- p }}), WithLogger(&kvLog{}))
	mustAdd(t, c, "@every 1h", Named("beat", FuncJob(func() {})))
	for _, ch := range []chan ObserverPanic{told, other} {
		select {
		case p := <-ch:
			if p.Function != "OnJobAdded" || p.Scheduler != "" {
				t.Errorf("told %+v, want OnJobAdded of a Cron without etcd", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a panic of OnJobAdded not told within 10s")
		}
	}
	select {
	case p := <-told:
		t.Errorf("told %+v after a panic of OnObserverPanic", p)
	case p := <-other:
		t.Errorf("told %+v after a panic of OnObserverPanic", p)
	case <-time.After(200 * time.Millisecond):
	}
}
