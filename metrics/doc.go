// Package metrics exports the events of cronx schedulers as Prometheus
// metrics, built on the cronx.Observer a scheduler reports to:
//
//	obs, err := metrics.New(prometheus.DefaultRegisterer)
//	if err != nil { ... }
//	c := cronx.New(cronx.WithEtcd(client), cronx.WithObserver(obs))
//
// One observer serves any number of Crons of a process: every series is
// labelled with its scheduler. New registers on the application's own
// registry; calling it again on the same registry returns an observer of
// the same metrics.
//
// The metrics, all named after what baton does, in base units:
//
//	baton_job_runs_total{scheduler,job,outcome}          counter: runs ended, outcome "success" or "failure"
//	baton_job_ticks_not_run_total{scheduler,job,reason}  counter: ticks this replica did not run, by cronx.Reason
//	                                                     ("no_leader", "misfire_skipped", "overlap", "paused",
//	                                                     "overtaken", "claimed_elsewhere", "etcd_unavailable",
//	                                                     "etcd_refused", "runner_lost", "buffer_full")
//	baton_job_run_duration_seconds{scheduler}            histogram: how long runs took
//	baton_job_tick_lateness_seconds{scheduler}           histogram: how long after its intended start (its tick
//	                                                     plus the job's WithJitter delay) a run started
//	baton_claim_latency_seconds{scheduler}               histogram: how long the claim of a run took in etcd
//	baton_scheduler_leader{scheduler}                    gauge: 1 while this replica leads the scheduler, else 0
//	baton_scheduler_leadership_changes_total{scheduler,change}
//	                                                     counter: terms "gained" and "lost" by this replica
//	baton_etcd_session_up{scheduler}                     gauge: 0 once this replica's etcd session is lost,
//	                                                     1 once one is granted again (or a run or term shows it)
//	baton_etcd_writes_refused{scheduler}                 gauge: 1 from etcd's first refusal of this replica's claims
//	                                                     (out of space, permission denied, request too large)
//	                                                     until it accepts writes again, else 0
//	baton_etcd_found_empty_total{scheduler}              counter: times etcd was found to have lost its data
//	baton_job_recovered_runs_total{scheduler,job}        counter: runs again of a tick whose runner died (WithRecovery); at 0 from the registration of a job that recovers
//	baton_job_ticks_buffered_total{scheduler,job}        counter: ticks of a BufferOne or BufferAll job this replica
//	                                                     buffered behind a run in progress
//	baton_job_hook_failures_total{scheduler,job,hook}    counter: calls of a job's hook ("on_failure", "on_success")
//	                                                     that returned an error, panicked or outlived their timeout
//	baton_job_start_runs_asked_total{scheduler,job}      counter: runs at start (cronx.WithRunAtStart) this
//	                                                     replica asked for, the first of its release to
//	                                                     schedule the job: one per release in the cluster;
//	                                                     at 0 from the registration of a job that runs at start
//	baton_observer_events_dropped_total                  counter: events dropped because this observer's
//	                                                     queue was full (see cronx.Observer)
//	baton_observer_panics_total{scheduler}               counter: panics of the functions of the scheduler's
//	                                                     observers, recovered and logged (cronx.ObserverPanic)
//	baton_job_last_success_timestamp_seconds{scheduler,job}
//	                                                     gauge: when the job's last successful run ended,
//	                                                     cluster-wide (cronx.JobOutcome); 0 while none is known
//	baton_job_last_failure_timestamp_seconds{scheduler,job}
//	                                                     gauge: when its last failed run ended, likewise
//	baton_job_consecutive_failures{scheduler,job}        gauge: its runs failed since its last success, likewise
//	baton_job_period_seconds{scheduler,job}              gauge: the time between its ticks, as its schedule had
//	                                                     them when it was added (cronx.JobAdded.Period)
//	baton_job_caught_up_runs_total{scheduler,job}        counter: runs this replica started of a tick missed
//	                                                     while nobody ran the job, late, within its catch-up
//	                                                     window (cronx.RunStarted.CaughtUp, cronx.WithCatchUp)
//	baton_job_backfill_ticks{scheduler,job}              gauge: the ticks of the job's backfill (cronx.Backfill)
//	                                                     this replica runs or last ran; 0 for none, or one refused
//	baton_job_backfill_ticks_done{scheduler,job}         gauge: its ticks claimed so far; equal to the ticks once
//	                                                     it finished, so ticks - done is what is left
//	baton_job_ended_timestamp_seconds{scheduler,job}     gauge: when its ticks end, its cronx.WithEndAt, or when
//	                                                     this replica found it at its cronx.WithMaxRuns
//	                                                     (cronx.JobEnded); 0 while it has neither
//
// Every series an alert or a dashboard needs exists, at 0, from the moment
// a job is added (cronx.Observer.OnJobAdded), so that increase() sees the
// first failure and the first tick not run: each of the job's outcomes,
// each reason its ticks can be reported with (cronx.JobAdded.Reasons), the
// failures of each of its hooks (cronx.JobAdded.Hooks), the
// histograms of its scheduler and, for a scheduler with etcd, its refused
// gauge, its empty-etcd counter and, in leader mode, its leader gauge and
// leadership changes; for a job of a scheduler with etcd, its outcome
// gauges, at 0, its period, its caught-up runs and its end; the observer panics of each scheduler. The
// session gauge appears once the session is known.
// The series of a removed job stay until the process ends.
//
// Labels stay bounded: schedulers, job names, outcomes, reasons and
// changes; never a tick time or an instance. The histograms are labelled by
// scheduler only, so that their series do not grow with the number of jobs.
//
// A job's outcome is etcd's, whichever replica ran the job: each record of
// a run writes it (see cronx.JobStatus.LastSuccess), and the replica that
// wrote it sets the gauges to what it wrote; a replica that starts sets
// them to what etcd has (0 for a job never run). A replica that stopped
// recording the job shows what was true when it last did: take max by
// (scheduler, job) over the replicas for the last success and failure,
// which only move forward, and read a 0 as not known, as
// docs/alerts.rules.yml does. The failures in a row are the cluster's on
// the replica that recorded last; a replica that stopped recording the job
// keeps its older count, so their max over replicas is an upper bound
// until a success anywhere is recorded on each (it is exact while no
// replica has seen a success, as for a job that never succeeded). So a
// job that stops succeeding is seen whichever replica runs it next, and a
// job that no replica runs at all is seen by its ticks not run.
//
// The counts are this replica's: in claim mode every replica reports a
// paused tick, and a tick claimed elsewhere is one that ran on another
// replica. The cluster-wide count of ticks that nobody ran is in etcd, read
// with cronx.Cron.Status or cronx.Control.Status (JobStatus.NotRun).
package metrics
