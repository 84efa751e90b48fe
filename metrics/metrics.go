package metrics

import (
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/prometheus/client_golang/prometheus"
)

// Buckets of the histograms, in seconds.
var (
	// durationBuckets spans jobs of a few milliseconds to an hour.
	durationBuckets = []float64{.005, .025, .1, .5, 1, 5, 15, 60, 300, 900, 3600}
	// latenessBuckets and claimBuckets span a healthy etcd's commit to a
	// misfire grace.
	latenessBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60}
	claimBuckets    = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
)

// collectors are the metrics of an observer.
type collectors struct {
	runs     *prometheus.CounterVec
	notRun   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	lateness *prometheus.HistogramVec
	claim    *prometheus.HistogramVec
	leader   *prometheus.GaugeVec
	changes  *prometheus.CounterVec
	session  *prometheus.GaugeVec
	refused  *prometheus.GaugeVec
	empty    *prometheus.CounterVec
	hooks    *prometheus.CounterVec
	buffered *prometheus.CounterVec
	// recovered counts the runs again of ticks whose runner died.
	recovered *prometheus.CounterVec
	dropped   prometheus.Counter
	// A job's outcome, cluster-wide (cronx.JobOutcome), and its period.
	lastSuccess *prometheus.GaugeVec
	lastFailure *prometheus.GaugeVec
	failures    *prometheus.GaugeVec
	period      *prometheus.GaugeVec
	panics      *prometheus.CounterVec
	caughtUp    *prometheus.CounterVec // runs of missed ticks (cronx.RunStarted.CaughtUp)
	// The backfill a replica runs (cronx.BackfillProgress).
	backfillTicks *prometheus.GaugeVec
	backfillDone  *prometheus.GaugeVec
	// startsAsked counts the runs at start this replica asked for.
	startsAsked *prometheus.CounterVec
	ended       *prometheus.GaugeVec // when a job's ticks end (cronx.WithEndAt, WithMaxRuns)
}

// New registers baton's metrics on reg and returns the observer that
// updates them, to give to cronx.WithObserver. Metrics registered on reg
// already by an earlier New are reused. It fails when reg is nil or holds
// a different metric of the same name.
func New(reg prometheus.Registerer) (cronx.Observer, error) {
	if reg == nil {
		return cronx.Observer{}, errors.New("metrics: New: nil registerer")
	}
	c := collectors{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_job_runs_total", Help: "Runs of a job that ended on this replica, by outcome.",
		}, []string{"scheduler", "job", "outcome"}),
		notRun: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_job_ticks_not_run_total", Help: "Ticks of a job that this replica did not run, by reason.",
		}, []string{"scheduler", "job", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baton_job_run_duration_seconds", Help: "How long runs took.", Buckets: durationBuckets,
		}, []string{"scheduler"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baton_job_tick_lateness_seconds", Help: "How long after its intended start (its tick plus the job's jitter delay) a run started.", Buckets: latenessBuckets,
		}, []string{"scheduler"}),
		claim: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baton_claim_latency_seconds", Help: "How long the claim of a run took in etcd.", Buckets: claimBuckets,
		}, []string{"scheduler"}),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_scheduler_leader", Help: "1 while this replica leads the scheduler, else 0.",
		}, []string{"scheduler"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_scheduler_leadership_changes_total", Help: "Terms of leadership gained and lost by this replica.",
		}, []string{"scheduler", "change"}),
		session: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_etcd_session_up", Help: "0 while this replica's etcd session is lost, else 1.",
		}, []string{"scheduler"}),
		refused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_etcd_writes_refused", Help: "1 while etcd refuses this replica's claims (out of space, permission denied, request too large), else 0.",
		}, []string{"scheduler"}),
		empty: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_etcd_found_empty_total", Help: "Times etcd was found to have come back without its data.",
		}, []string{"scheduler"}),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_job_recovered_runs_total", Help: "Runs on this replica of a tick again, its runner having died mid-run (each attempt of one counts, as in baton_job_runs_total).",
		}, []string{"scheduler", "job"}),
		hooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_job_hook_failures_total", Help: "Calls of a job's hook on this replica that returned an error, panicked or outlived their timeout.",
		}, []string{"scheduler", "job", "hook"}),
		buffered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_job_ticks_buffered_total", Help: "Ticks of a BufferOne or BufferAll job that came while a run was in progress and that this replica buffered to run after it.",
		}, []string{"scheduler", "job"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_observer_events_dropped_total", Help: "Events dropped because the metrics observer's queue was full.",
		}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_job_last_success_timestamp_seconds", Help: "When the job's last successful run ended, cluster-wide, as this replica last recorded it; 0 when none is known.",
		}, []string{"scheduler", "job"}),
		lastFailure: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_job_last_failure_timestamp_seconds", Help: "When the job's last failed run ended, cluster-wide, as this replica last recorded it; 0 when none is known.",
		}, []string{"scheduler", "job"}),
		failures: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_job_consecutive_failures", Help: "Runs of the job that failed since its last success, cluster-wide, as this replica last recorded it.",
		}, []string{"scheduler", "job"}),
		caughtUp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_job_caught_up_runs_total", Help: "Runs this replica started of a tick of the job missed while nobody ran it (an outage of etcd or of every replica, a failover), late, within the job's catch-up window.",
		}, []string{"scheduler", "job"}),
		ended: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_job_ended_timestamp_seconds", Help: "When the job's ticks end: its end time (WithEndAt, end=), or when this replica found it at its maximum of runs (WithMaxRuns, max-runs=); 0 while it has neither.",
		}, []string{"scheduler", "job"}),
		period: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_job_period_seconds", Help: "The time between the job's ticks, as its schedule had them when it was added.",
		}, []string{"scheduler", "job"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_observer_panics_total", Help: "Panics of the functions of the scheduler's observers, recovered and logged.",
		}, []string{"scheduler"}),
		backfillTicks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_job_backfill_ticks", Help: "The ticks of the job's backfill this replica runs or last ran (cronx.Backfill); 0 for none, or one refused.",
		}, []string{"scheduler", "job"}),
		backfillDone: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "baton_job_backfill_ticks_done", Help: "The ticks of that backfill claimed so far: equal to baton_job_backfill_ticks once it finished.",
		}, []string{"scheduler", "job"}),
		startsAsked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_job_start_runs_asked_total", Help: "Runs at start (WithRunAtStart, @start) that this replica asked for, as the first of its release to schedule the job: one per release in the cluster.",
		}, []string{"scheduler", "job"}),
	}
	if err := register(reg, &c); err != nil {
		return cronx.Observer{}, err
	}
	return c.observer(), nil
}

// register registers each collector of c on reg, or takes the one reg has
// already.
func register(reg prometheus.Registerer, c *collectors) error {
	return errors.Join(
		use(reg, &c.runs), use(reg, &c.notRun), use(reg, &c.duration), use(reg, &c.lateness), use(reg, &c.claim),
		use(reg, &c.leader), use(reg, &c.changes), use(reg, &c.session), use(reg, &c.refused), use(reg, &c.empty), use(reg, &c.hooks), use(reg, &c.recovered), use(reg, &c.buffered),
		use(reg, &c.dropped), use(reg, &c.lastSuccess), use(reg, &c.lastFailure), use(reg, &c.failures), use(reg, &c.period), use(reg, &c.panics),
		use(reg, &c.caughtUp), use(reg, &c.backfillTicks), use(reg, &c.backfillDone), use(reg, &c.startsAsked), use(reg, &c.ended))
}

func use[T prometheus.Collector](reg prometheus.Registerer, c *T) error {
	err := reg.Register(*c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			*c = existing
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// observer updates the collectors from a Cron's events.
func (c collectors) observer() cronx.Observer {
	return cronx.Observer{
		OnJobAdded: c.jobAdded,
		OnRunStarted: func(e cronx.RunStarted) {
			c.session.WithLabelValues(e.Scheduler).Set(1)
			if !e.Triggered && !e.Backfill {
				c.lateness.WithLabelValues(e.Scheduler).Observe(e.Lateness.Seconds())
			}
			if e.Fence.Key != "" {
				c.claim.WithLabelValues(e.Scheduler).Observe(e.ClaimLatency.Seconds())
			}
			if e.CaughtUp {
				c.caughtUp.WithLabelValues(e.Scheduler, e.Job).Inc()
			}
			if e.Recovered > 0 {
				c.recovered.WithLabelValues(e.Scheduler, e.Job).Inc()
			}
		},
		OnRunEnded: func(e cronx.RunEnded) {
			c.runs.WithLabelValues(e.Scheduler, e.Job, e.Outcome.String()).Inc()
			c.duration.WithLabelValues(e.Scheduler).Observe(e.Duration.Seconds())
		},
		OnTickNotRun: func(e cronx.TickNotRun) {
			c.notRun.WithLabelValues(e.Scheduler, e.Job, e.Reason.String()).Inc()
		},
		OnLeadershipGained: func(e cronx.Leadership) {
			c.leader.WithLabelValues(e.Scheduler).Set(1)
			c.session.WithLabelValues(e.Scheduler).Set(1)
			c.changes.WithLabelValues(e.Scheduler, "gained").Inc()
		},
		OnLeadershipLost: func(e cronx.Leadership) {
			c.leader.WithLabelValues(e.Scheduler).Set(0)
			c.changes.WithLabelValues(e.Scheduler, "lost").Inc()
		},
		OnSessionLost:     func(e cronx.Session) { c.session.WithLabelValues(e.Scheduler).Set(0) },
		OnSessionRegained: func(e cronx.Session) { c.session.WithLabelValues(e.Scheduler).Set(1) },
		OnEtcdRefused:     func(e cronx.EtcdRefusal) { c.refused.WithLabelValues(e.Scheduler).Set(1) },
		OnEtcdAccepted:    func(e cronx.EtcdRefusal) { c.refused.WithLabelValues(e.Scheduler).Set(0) },
		OnEtcdEmpty:       func(e cronx.EtcdEmpty) { c.empty.WithLabelValues(e.Scheduler).Inc() },
		OnHookFailed:      func(e cronx.HookFailed) { c.hooks.WithLabelValues(e.Scheduler, e.Job, string(e.Hook)).Inc() },
		OnTickBuffered:    func(e cronx.TickBuffered) { c.buffered.WithLabelValues(e.Scheduler, e.Job).Inc() },
		OnJobEnded:        func(e cronx.JobEnded) { c.ended.WithLabelValues(e.Scheduler, e.Job).Set(unixSeconds(e.Time)) },
		OnDropped:         func(n int) { c.dropped.Add(float64(n)) },
		OnJobOutcome:      c.jobOutcome,
		OnObserverPanic:   func(e cronx.ObserverPanic) { c.panics.WithLabelValues(e.Scheduler).Inc() },
		OnBackfill:        c.backfill,
		OnStartAsked:      func(e cronx.StartAsked) { c.startsAsked.WithLabelValues(e.Scheduler, e.Job).Inc() },
	}
}

// jobAdded makes the series of a job, and of its scheduler, that its
// events will update, each at 0 and none set: a counter that appears at its
// first increment shows no increase(), so an alert on a job's first failure
// or first tick not run would not fire. Only the reasons that can happen to
// the job, and its hooks, are made; a gauge already set keeps its value.
func (c collectors) jobAdded(e cronx.JobAdded) {
	for _, o := range []cronx.Outcome{cronx.Succeeded, cronx.Failed} {
		c.runs.WithLabelValues(e.Scheduler, e.Job, o.String())
	}
	for _, r := range e.Reasons {
		c.notRun.WithLabelValues(e.Scheduler, e.Job, r.String())
		if r == cronx.ReasonBufferFull { // a job that buffers its ticks
			c.buffered.WithLabelValues(e.Scheduler, e.Job)
		}
	}
	for _, h := range e.Hooks {
		c.hooks.WithLabelValues(e.Scheduler, e.Job, string(h))
	}
	if e.Recovers {
		c.recovered.WithLabelValues(e.Scheduler, e.Job)
	}
	if e.RunsAtStart {
		c.startsAsked.WithLabelValues(e.Scheduler, e.Job)
	}
	c.duration.WithLabelValues(e.Scheduler)
	c.lateness.WithLabelValues(e.Scheduler)
	c.panics.WithLabelValues(e.Scheduler)
	if !e.Coordinated {
		return
	}
	// A job's outcome is in etcd: the gauges of one without are not made.
	c.period.WithLabelValues(e.Scheduler, e.Job).Set(e.Period.Seconds())
	c.lastSuccess.WithLabelValues(e.Scheduler, e.Job)
	c.lastFailure.WithLabelValues(e.Scheduler, e.Job)
	c.failures.WithLabelValues(e.Scheduler, e.Job)
	c.caughtUp.WithLabelValues(e.Scheduler, e.Job)
	c.backfillTicks.WithLabelValues(e.Scheduler, e.Job)
	c.backfillDone.WithLabelValues(e.Scheduler, e.Job)
	if ended := c.ended.WithLabelValues(e.Scheduler, e.Job); !e.EndAt.IsZero() {
		ended.Set(unixSeconds(e.EndAt))
	}
	c.claim.WithLabelValues(e.Scheduler)
	c.refused.WithLabelValues(e.Scheduler)
	c.empty.WithLabelValues(e.Scheduler)
	if e.Mode == cronx.LeaderMode {
		c.leader.WithLabelValues(e.Scheduler)
		c.changes.WithLabelValues(e.Scheduler, "gained")
		c.changes.WithLabelValues(e.Scheduler, "lost")
	}
}

// jobOutcome sets a job's outcome gauges to what a record wrote in etcd: a
// time not known is 0.
func (c collectors) jobOutcome(e cronx.JobOutcome) {
	c.lastSuccess.WithLabelValues(e.Scheduler, e.Job).Set(unixSeconds(e.LastSuccess))
	c.lastFailure.WithLabelValues(e.Scheduler, e.Job).Set(unixSeconds(e.LastFailure))
	c.failures.WithLabelValues(e.Scheduler, e.Job).Set(float64(e.ConsecutiveFailures))
}

// backfill sets a job's backfill gauges to the step a backfill came to; a
// refused one runs nothing.
func (c collectors) backfill(e cronx.BackfillProgress) {
	ticks, done := float64(e.Ticks), float64(e.Done)
	if e.Refused != "" {
		ticks, done = 0, 0
	}
	c.backfillTicks.WithLabelValues(e.Scheduler, e.Job).Set(ticks)
	c.backfillDone.WithLabelValues(e.Scheduler, e.Job).Set(done)
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
