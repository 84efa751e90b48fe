package cronx_test

import (
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// observed returns the options of a Cron with baton's metrics and a second
// observer that counts every event, as an application that logs them would.
func observed(b *testing.B) []cronx.Option {
	obs, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	var events atomic.Int64
	count := func() { events.Add(1) }
	counter := cronx.Observer{
		OnRunStarted: func(cronx.RunStarted) { count() },
		OnRunEnded:   func(cronx.RunEnded) { count() },
		OnTickNotRun: func(cronx.TickNotRun) { count() },
	}
	return []cronx.Option{cronx.WithObserver(obs, counter)}
}

// BenchmarkTenThousandJobsObserved is BenchmarkTenThousandJobs with
// metrics and an observer on, to compare with it:
//
//	go test -run '^$' -bench TenThousandJobs -benchtime 1x ./cronx/
func BenchmarkTenThousandJobsObserved(b *testing.B) {
	cronx.BenchTenThousandJobs(b, observed(b)...)
}

// BenchmarkHeapPerJobObserved is BenchmarkHeapPerJob with metrics and an
// observer on.
func BenchmarkHeapPerJobObserved(b *testing.B) {
	cronx.BenchHeapPerJob(b, observed(b)...)
}
