// # Observing a Cron
//
// WithObserver gives a Cron an Observer, a struct of callbacks, each
// optional: OnJobAdded (a job added, with the reasons its ticks can be
// reported with, before any of its runs), OnRunStarted and OnRunEnded (job,
// nominal tick, instance, fence, lateness from the intended start (the tick
// plus the jitter delay), claim latency, whether it caught up a missed
// tick, duration, outcome, error), OnJobEnded (a job found at its
// WithMaxRuns), OnTickNotRun (a tick this replica did not run, and its
// Reason), OnLeadershipGained and OnLeadershipLost, OnSessionLost and
// OnSessionRegained (this replica's etcd session), OnEtcdRefused and
// OnEtcdAccepted (etcd refusing this replica's claims, and accepting writes
// again), OnEtcdEmpty (etcd came back without its data), OnJobOutcome (the
// last success, last failure and failures in a row that the record of a
// run wrote in etcd), OnBackfill (each step of a backfill this replica
// runs), OnStartAsked (a run at start this replica asked for),
// OnTickBuffered (a tick of a BufferOne or BufferAll job that waits
// for the run in progress) and OnObserverPanic (a function of an observer
// panicked). A Cron without etcd reports its jobs and runs too. Package
// github.com/batonhq/baton/metrics turns them into Prometheus metrics.
//
// The reasons are a closed set, each reported by the replica that knows it:
//
//	ReasonNoLeader          the tick fell while no replica led (a leader crashed or was cut off);
//	                        the next leader reports the gap's ticks, but the one it catches up
//	ReasonMisfireSkipped    the loop woke up past the tick's misfire deadline (a stalled process,
//	                        a clock jump); under RunOnce the grace, under Skip about a second;
//	                        or, in leader mode, due while the loop stalled, beside the one it fired
//	ReasonOverlap           Forbid, and a run of the job was in progress
//	ReasonPaused            the job was paused
//	ReasonOvertaken         a later tick of the job was claimed, or came due, before this one's
//	                        claim reached etcd; the later one stands for it
//	ReasonClaimedElsewhere  claim mode: another replica claimed it first (so it ran)
//	ReasonEtcdUnavailable   etcd did not answer the claim before the misfire deadline
//	ReasonEtcdRefused       etcd answered the claim with a refusal until the misfire deadline:
//	                        out of space, permission denied, request too large; or, in claim
//	                        mode, it grants no lease as short as the TTL (given up at once)
//	ReasonRunnerLost        leader mode: a leader lost before it recorded a run claimed the tick;
//	                        its successor reports it, since the run may not have started (with
//	                        WithRecovery, once its recoveries are spent)
//	ReasonBufferFull        BufferOne or BufferAll, a run was in progress and the job's buffer
//	                        held as many waiting ticks as it keeps
//
// Which can happen to a job depends on its Cron and policy: none without
// etcd (every tick runs, as under robfig/cron); with etcd, misfire_skipped,
// paused, overtaken, etcd_unavailable and etcd_refused, and no_leader and
// runner_lost in leader mode, claimed_elsewhere in claim mode, overlap under
// Forbid, buffer_full under BufferOne and BufferAll.
// JobAdded.Reasons lists them, so that an observer counts each from zero.
//
// An etcd that refuses a write answers; it is not out. It is out of space
// (the NOSPACE alarm of --quota-backend-bytes, which stays until space is
// freed and the alarm disarmed), the user's role may not write under the
// prefix, or a request is too large (--max-request-bytes, --max-txn-ops).
// The first claim it refuses is an error in the log, in etcd's words, and
// OnEtcdRefused; claims are retried until their misfire deadline, as while
// etcd does not answer, and a tick still refused then is not run, with
// ReasonEtcdRefused. While etcd refuses, the replica sends a write that
// changes nothing every second, so it hears that etcd accepts writes again
// (OnEtcdAccepted, and a line at info level through WithSlog) though no
// tick is due; a request too large stays refused until a claim is accepted.
// etcd from 3.5 on also refuses the keepalives of a lease whose keys the
// user may not write, so a leader that loses its write permission loses its
// term too, and that is a refusal as well. A follower, which writes
// nothing, hears of none. Leadership gained and lost is logged at info
// level through WithSlog, with the cause of a loss.
//
// An observer never slows the scheduler: each has a queue of its own
// (Observer.QueueSize, DefaultObserverQueue by default) and a goroutine
// that calls it, one event at a time, while events wait. When the queue of
// a slow observer is full, its further events are dropped, not waited for,
// and OnDropped is told how many before its next event (the metrics package
// counts them in baton_observer_events_dropped_total). The goroutine ends
// when the queue is empty, so none outlives a stopped Cron's last events.
// An observer's function that panics is recovered in that goroutine and
// logged as an error, once per event, with the function's name and the
// stack; the observer gets the events that follow.
//
// # Ticks not run, cluster-wide
//
// Every tick that nobody in the cluster ran is counted in etcd, by job,
// reason and hour, under P/jobs/<scheduler>/<job>/notrun; Status (and
// Control.Status, baton status) returns each job's counts over the last 24
// hours, to the hour, in JobStatus.NotRun. A tick claimed elsewhere ran, so
// it is an event, never a count. The counts cost a tick that runs nothing,
// and a follower nothing: a replica keeps its ticks not run in memory and
// writes them every ten seconds, many jobs in one pair of transactions, each
// job's key with a compare of its revision. A tick is counted once however
// many replicas report it (the key remembers the latest tick counted), and
// not if the job's last claim or its history shows it ran; so an
// every-second job paused for a week costs each replica two requests every
// ten seconds. Hours older than a day are pruned at each write and ignored
// when read.
//
// Limits: the counts are best effort. Ticks not run while etcd does not
// answer are kept, up to 1024 a job, and written once it answers; a replica
// that stops or crashes before then loses them. In claim mode, a tick one
// replica alone could not claim (misfire, overtaken, etcd unavailable) may
// have run on another, so it counts only while no later tick of its job has
// been claimed: a nightly job whose tick nobody could claim counts, an
// every-second job's ticks missed in a whole-cluster outage may not. A new
// leader reports at most the latest 1000 ticks of a job's gap as events,
// and counts at most a day of them; it does not count the gap when it
// cannot read the last claims within a second of taking over.
package cronx
