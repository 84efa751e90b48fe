// # Job policies
//
// A job's policy is set by JobOptions: given to Named for that job, or to
// WithJobOptions for every job of a Cron (a job's own options win). Each
// holds for the job in the whole cluster, not in one process. They are
// policies of coordinated runs: a Cron without etcd applies WithDST, and
// runs its jobs as robfig/cron does otherwise (robfig's wrappers, such as
// SkipIfStillRunning, serve it). A value an option cannot take is an error
// of AddJob naming the job.
//
//	c.AddJob("0 2 * * *", cronx.Named("nightly", cronx.ContextFunc(run),
//		cronx.WithOverlap(cronx.Forbid), cronx.WithTimeout(time.Hour)))
//
// WithOverlap(Replace) stops the run in progress when the next tick comes:
// the new tick is claimed beside it, the running run's context is
// cancelled with ErrReplaced on whichever replica runs it, and the new run
// starts once the old one has returned and released its marker, or once
// the lease of a replica that died running it has expired (up to the
// TTL). Two runs never overlap, and every tick is claimed once. A job must
// return when its context ends: one that does not keeps its successors
// waiting, and a run still waiting when an even later tick is claimed
// gives way to that tick without starting (ReasonOvertaken). A run that
// loses its claim's session while it waits does not start
// (ReasonEtcdUnavailable); one whose replica stops or gives up its term
// while it waits does not start either, and its claim is given back, so
// that the successor runs the tick. A trigger of a Replace job replaces
// as a tick does: the run in progress, a tick's or another trigger's, is
// cancelled with ErrReplaced, and the job's next tick or trigger replaces
// the triggered run in turn. Of a burst of triggers, each run still waiting
// when a later one is claimed gives way to it without starting, and its
// request is done with: the burst costs what its runs cost.
//
// WithOverlap(BufferOne) and WithOverlap(BufferAll), as Temporal's overlap
// policies of those names, keep a tick that comes while a run of the job
// is in progress on any replica: it waits in etcd (the job's buffer/<tick>
// keys) and runs once that run has ended, or once the lease of a replica
// that died running it has expired, with its own time as Info.Tick. The
// waiting ticks run one at a time, in the order of their ticks, each once;
// a tick never runs ahead of one that waits. BufferOne keeps one waiting
// and BufferAll up to 100: a tick that comes while the buffer is full is
// dropped, and reported as ReasonBufferFull. The buffer outlives its
// leader: a new leader runs the ticks its predecessor left waiting, and in
// claim mode every replica that fired a buffered tick waits for its turn,
// so any live one runs it. A job paused while ticks wait drops them, each
// a ReasonPaused, when its turn comes. A trigger of a buffering job waits
// for the run in progress, as under Forbid. Status lists the waiting ticks
// (JobStatus.Buffered), and observers are told each tick buffered
// (OnTickBuffered). Limits: a tick waits as long as the run before it
// lasts, with no misfire deadline, and its run's lateness counts from its
// tick; a catch-up tick (the misfire grace) is buffered only for a job that
// ran before; a job removed, or given another overlap policy, leaves its
// waiting ticks in etcd, to run if it buffers again.
//
// WithTimeout(d) ends each run's context d after it started, on the
// replica that runs it, with ErrTimeout as the cause; the run is recorded
// in the history with TimedOut set. It does not stop a job that ignores its
// context: a plain Job runs on, and is recorded as timed out when it
// returns.
//
// WithDST(DSTOnce) changes what a job at given hours does on the nights its
// zone's clocks change: a time the clocks skip runs at the transition, and
// a time they show twice runs once, at its first occurrence, as in Vixie
// cron. The default, DSTAsRobfig, is robfig/cron's: a skipped time does not
// run and a repeated one runs twice. A job whose hour field is * runs every
// real hour under either rule. The rule is a function of the zone data, so
// every replica names the moved tick alike and it is claimed once; replicas
// with different tzdata versions may disagree about a transition.
//
// WithJitter(max) spreads jobs due on the same tick: each run is claimed
// and started at its tick plus a delay under max, a hash of the job's name
// and the tick, so every replica computes the same delay and the tick is
// still claimed once, under its nominal time (Info.Tick). The claims spread
// too: ten thousand jobs on one minute with a ten-second jitter are a
// thousand claims a second, not ten thousand at once (BENCHMARKS.md). A
// leader that stops with delays pending leaves those ticks to its
// successor's catch-up (misfire RunOnce; under Skip they are not run). A
// jitter longer than the time between the job's ticks can make a tick come
// after the next one's claim, and it is then not run. Triggers are not
// delayed. A run's lateness (RunStarted.Lateness) counts from its tick plus
// its delay, the start it was meant to have.
//
// WithRetries(attempts, backoff) runs a run that failed (a ContextJob's
// error, a timeout included) again, up to attempts runs in all, after
// backoff and twice as long before each next one. The replica that holds
// the tick's claim retries it, under the same claim and in-progress marker
// (Info.Fence, Info.Attempt), and only while that claim and, in leader
// mode, its term hold; each attempt is a record of the history. A Forbid
// job keeps its marker through the backoff, so its next tick is skipped
// rather than run beside a retry. A replica that stops, crashes or loses
// its lease between attempts does not hand the rest to another: the tick
// runs at most once, and its remaining attempts are lost. An Observer sees
// each attempt as a run (OnRunStarted, OnRunEnded).
//
// WithCatchUp(window) is how old a tick of the job missed while nobody
// ran it may be and still run, once, when the cluster is back: after an
// outage of etcd (every replica's term lapses; the one that leads next
// catches up), after every replica was stopped (the first to start catches
// up), or after a leader's crash. The replica that takes over claims the
// latest tick in the window that it has not fired, under that tick's name,
// so G1 holds: once in the cluster, if the job ran, or was published
// before the takeover and by the tick (a tick that came due before the
// cluster had the job is not run). Earlier ticks of the gap are not run
// and are counted as ReasonNoLeader (over a day at most), for a job that
// never ran from its publication on. The latest tick is searched for
// (about log2 of the window in nanoseconds calls of the schedule's Next)
// rather than walked to, so a gap of a year costs what a minute's does,
// and the schedule goes on from the moment of the takeover: no burst. A
// live tick whose claim etcd does not answer is retried until its tick
// plus the window. Without WithCatchUp the Cron's WithMisfire applies;
// WithCatchUp(0) catches nothing up. A caught-up run's RunStarted and
// Record have CaughtUp set. A tick this replica fired and gave up before
// its run started (its term ended with etcd while the claim waited for an
// answer, its jitter or its turn) is caught up by it too when it leads
// again, so a lone replica loses no tick to an outage of etcd.
//
// WithStartAt(t) and WithEndAt(t) bound a job's ticks to [start, end):
// its schedule is wrapped so that it has no tick before the start nor at or
// after the end, the same on every replica, so a tick outside them is not
// missed (neither run nor counted as not run). WithMaxRuns(n) runs the job's
// ticks n times in all, cluster-wide: each tick's claim counts itself in the
// job's runs key (its etcd version) and commits only while fewer than n
// were counted, in one transaction, so replicas, failovers and restarts
// share one count; the replica whose claim finds the limit fires no more
// of the job's ticks (after the one it computed already) and tells its
// observers (JobEnded). JobStatus.Runs, MaxRuns, StartAt and EndAt are what
// the claims wrote (nothing before a bounded job's first run), and
// JobStatus.Ended says whether it runs no more. A trigger is neither bounded
// nor counted. Limit: a claim given back (a Stop before its run started) was
// counted, so a job may run fewer than n times, never more.
//
// WithPauseAfter(n) pauses the job, cluster-wide, once n of its runs in a
// row have failed: the record of the n-th failure writes the pause key (as
// Pause does, unless the job is paused already) in the transaction that
// appends the run to the history, with the replica as who and the count and
// the last error as why (JobStatus.PausedBy, JobStatus.PausedReason), until
// Resume. The failures are counted from the last success, in the job's
// outcome key, beside its history: JobStatus.LastSuccess, LastFailure and
// ConsecutiveFailures, cluster-wide however far back in the history.
//
// WithRecovery(n) runs a tick again, up to n times, when the replica that
// ran it died mid-run (a crash, or a pause or partition past its lease). In
// leader mode, a new leader looks at the tick it catches up (within the
// job's catch-up window: WithCatchUp, else the misfire grace under RunOnce)
// and at each such job's last claimed tick while its next has not come
// due, so a long run found dead past the window
// is run again too (of overlapping runs, only the latest's). Once the lost
// run's in-progress marker has lapsed with no record of the run in the
// job's history, it claims a recovery in one transaction, under its term,
// while the tick has no marker, no record came meanwhile and fewer than n
// recoveries are counted in the job's recovered key: however many replicas
// look, the cluster decides once. The run again has a fence of its own,
// later than the lost run's, and Info.Recovered (1 for the first recovery;
// its attempts count from 1 again), and is recorded so (Record.Recovered);
// a tick whose recoveries are spent is reported not run, ReasonRunnerLost.
// A run that returned, failed, timed out, was replaced or was ended by
// Stop, Shutdown or the loss of its claim writes its record before its
// marker goes, and is never run again; but a runner cut off from etcd,
// which ends its run at its safe deadline, can write its record only once
// it reaches etcd again, so a successor that decides before then runs the
// tick again. A run again is the tick's second start: the lost run's
// context ended before its lease lapsed, so the two never overlap, but
// work a job does outside its context and its fence can be done twice.
//
// WithRunAtStart runs the job once per release of the app, in the whole
// cluster: however many replicas of a release start, and not again when one
// of them restarts. A release is what WithRelease names, else the RELEASE
// variable of the environment, which Convox sets in every process of an
// app; a coordinated Cron with neither refuses such a job (AddJob's error),
// since a start could not be told from a restart. The replica that
// publishes the job's spec first under a release (the leader, or in claim
// mode each replica as it starts, and a running one for a job added later)
// reads the job's started key and, while it is unchanged and does not name
// the release, writes the release into it and a trigger request in one
// transaction: the run is a triggered run (Info.Triggered, the time of the
// request as its Tick), once in the cluster, under the job's overlap
// policy, and only a replica of that release takes it, so that a release's
// start runs that release's code (a replica of an older release that leads
// during a roll-out leaves it to the first of the new one that leads). The
// key keeps the last 16 releases that ran the job (JobStatus.Started), so a
// replica of an older release still running, or restarted, while a newer
// one rolls out does not run it again; one older than the last 16 does.
// Observers are told of each run asked for (OnStartAsked). The job keeps
// its schedule; a Cron without etcd ignores the option. A run at start is a
// trigger, and a trigger runs a paused job: a release that starts while the
// job is paused runs it all the same, and its start is not run again after
// Resume.
package cronx
