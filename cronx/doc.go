// Package cronx runs jobs on cron schedules inside a Go program. It is a drop-in
// replacement for github.com/robfig/cron/v3 (v3.0.1): the same names, the same
// specs and the same behaviour, so a program changes only its import path:
//
//	import cron "github.com/batonhq/baton/cronx"
//
// cronx wraps robfig/cron v3.0.1 rather than rewriting it. These names are
// robfig's own, as aliases or as functions that call robfig's, so a value made
// by either package is a value of the other: Schedule, ScheduleParser, Job,
// FuncJob, JobWrapper, Chain, NewChain, Logger, PrintfLogger,
// VerbosePrintfLogger, DefaultLogger, DiscardLogger, Parser, NewParser,
// ParseOption and its constants (Second, Minute, ..., Descriptor),
// SpecSchedule, ConstantDelaySchedule, Every and EntryID. ParseStandard is
// robfig's, errors included, except that a spec robfig's parser panics on is
// an error. Recover, DelayIfStillRunning
// and SkipIfStillRunning are robfig's for a plain Job; for a ContextJob they
// pass its context through (see Cluster coordination). Entry has robfig's
// fields but is a type of its own, as it also carries the job's cluster name.
// What cronx adds is its Cron, with its options and run loop, cluster
// coordination, and the context jobs: ContextJob, ContextFunc, Named, Info
// and InfoFrom.
//
// robfig/cron's own test suite passes against this package, alone and
// coordinated, except the few tests that reach robfig's unexported parser
// and logger internals, which robfig's own suite checks.
//
// # What it guarantees, and what it does not
//
//   - A job runs in its own goroutine; a slow job delays neither the scheduler
//     nor other jobs. Runs of one job may overlap unless a JobWrapper forbids
//     it (see Job wrappers).
//   - Each run belongs to a nominal tick: the time the schedule named, to the
//     second. Entry.Next and Entry.Prev are nominal ticks, not the moments the
//     process happened to wake up.
//   - A scheduler that wakes up late (a paused process, a loaded machine, a
//     clock stepped forward) runs each late entry once, for its earliest missed
//     tick, and schedules the next run from the time it woke. Missed ticks are
//     not made up, and a schedule is not replayed after a restart: the
//     scheduler keeps no state outside the process.
//   - Stop stops scheduling at once; it does not interrupt running jobs. The
//     context it returns is done when they have returned. Shutdown(ctx) bounds
//     the wait: when ctx ends it cancels the running jobs' contexts
//     (ErrShutdown), as http.Server.Shutdown closes its connections.
//   - The resolution is one second. Schedules are computed on the wall clock,
//     so a clock stepped backwards delays runs until it catches up.
//   - Without cluster coordination, every process that runs the same Cron runs
//     every job: N replicas run a job N times. See Cluster coordination.
//
// # Usage
//
// Register funcs (or Jobs) with a schedule, then start the scheduler:
//
//	c := cronx.New()
//	c.AddFunc("30 * * * *", func() { fmt.Println("every hour on the half hour") })
//	c.AddFunc("30 3-6,20-23 * * *", func() { fmt.Println("half past the hour, 3-6 am and 8-11 pm") })
//	c.AddFunc("CRON_TZ=Asia/Tokyo 30 04 * * *", func() { fmt.Println("04:30 in Tokyo, every day") })
//	c.AddFunc("@hourly", func() { fmt.Println("every hour, on the hour") })
//	c.AddFunc("@every 1h30m", func() { fmt.Println("every hour and a half, from now") })
//	c.Start()
//	...
//	// Jobs may be added to, and removed from, a running Cron.
//	id, _ := c.AddFunc("@daily", func() { fmt.Println("every day at midnight") })
//	...
//	// Entries reports each job's next and previous run.
//	for _, e := range c.Entries() {
//		fmt.Println(e.ID, e.Prev, e.Next)
//	}
//	c.Remove(id)
//	...
//	ctx := c.Stop() // no job starts from now on
//	<-ctx.Done()    // the jobs that were running have returned
//
// A SIGTERM handler gives the running jobs a grace period, and then their
// contexts end:
//
//	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
//	defer cancel()
//	c.Shutdown(ctx)
//
// AddFunc and AddJob return robfig's parser's error, word for word, when the
// spec does not parse; nothing is added then. A spec it would panic on (a
// CRON_TZ= with no schedule after it) is an error that names the spec. A
// Parser's own Parse method is robfig's, panic included.
//
// # Spec format
//
// A spec has five fields separated by spaces:
//
//	Field         Required  Values            Special characters
//	-----         --------  ------            ------------------
//	Minutes       yes       0-59              * / , -
//	Hours         yes       0-23              * / , -
//	Day of month  yes       1-31              * / , - ?
//	Month         yes       1-12 or JAN-DEC   * / , -
//	Day of week   yes       0-6 or SUN-SAT    * / , - ?
//
// Month and day-of-week names are case-insensitive: "SUN", "Sun" and "sun" are
// the same. The fields mean what they mean in crontab(5)
// (https://en.wikipedia.org/wiki/Cron); in particular, when both day fields are
// restricted, a day that matches either one runs ("0 0 1,15 * MON" is the 1st,
// the 15th and every Monday), and when either is "*", a day must match both.
//
// The special characters:
//
//   - Asterisk (*): every value of the field; "*" in the month field is every
//     month.
//   - Slash (/): a step through a range. "3-59/15" in the minutes field is the
//     3rd minute of the hour and every 15 minutes after; "*/15" steps through
//     the whole field (0, 15, 30, 45); "N/15" starts at N and runs to the end
//     of the field, without wrapping around.
//   - Comma (,): a list. "MON,WED,FRI" in the day-of-week field is Mondays,
//     Wednesdays and Fridays.
//   - Hyphen (-): a range, inclusive. "9-17" in the hours field is every hour
//     from 9 am to 5 pm.
//   - Question mark (?): the same as "*", for leaving one of the day fields
//     open.
//
// # Seconds and other formats
//
// A Parser made by NewParser accepts a chosen set of fields, in the order
// above, with a seconds field first when Second or SecondOptional is chosen.
// WithSeconds gives a Cron a parser with a required seconds field, as in
// Quartz (http://www.quartz-scheduler.org/documentation/quartz-2.x/tutorials/crontrigger.html):
//
//	c := cronx.New(cronx.WithSeconds())
//	c.AddFunc("*/10 * * * * *", job) // every 10 seconds
//
// The seconds field may be made optional instead, with a custom parser:
//
//	cronx.New(cronx.WithParser(cronx.NewParser(
//		cronx.SecondOptional | cronx.Minute | cronx.Hour | cronx.Dom | cronx.Month | cronx.Dow | cronx.Descriptor)))
//
// # Predefined schedules
//
// A descriptor may stand in place of the fields:
//
//	Descriptor              Runs                                      Same as
//	----------              ----                                      -------
//	@yearly (or @annually)  once a year, at midnight on January 1st   0 0 1 1 *
//	@monthly                once a month, at midnight on the 1st      0 0 1 * *
//	@weekly                 once a week, at midnight Saturday-Sunday  0 0 * * 0
//	@daily (or @midnight)   once a day, at midnight                   0 0 * * *
//	@hourly                 once an hour, on the hour                 0 * * * *
//
// # Intervals
//
// "@every <duration>", with a duration time.ParseDuration accepts, runs a job
// at a fixed interval counted from when the Cron starts, or from when the job
// is added to a running Cron: "@every 1h30m10s" runs an hour, 30 minutes and
// 10 seconds after that, and every such interval after. Intervals are whole
// seconds: a shorter one is raised to one second, and a fraction is dropped.
//
// The interval does not count the job's run time: a job that takes 3 minutes,
// every 5 minutes, is idle for 2 minutes between runs. Every builds the same
// schedule in code.
//
// # Time zones
//
// A Cron interprets schedules in time.Local unless WithLocation says
// otherwise:
//
//	nyc, _ := time.LoadLocation("America/New_York")
//	c := cronx.New(cronx.WithLocation(nyc))
//	c.AddFunc("0 6 * * ?", job) // 6 am in New York
//
// A spec may carry its own zone, which wins over the Cron's, as a first field
// CRON_TZ=<zone> (TZ=<zone> is accepted too):
//
//	c.AddFunc("CRON_TZ=Asia/Tokyo 0 6 * * ?", job) // 6 am in Tokyo
//
// Daylight saving time is taken as it comes: a time that a transition skips
// does not run (a job at 2:30 am misses the night the clocks go forward), and a
// time that occurs twice runs twice.
//
// # Job wrappers
//
// A Chain of JobWrappers adds behaviour to jobs: recovering panics, delaying or
// skipping a run while the previous one is still running, logging runs.
// WithChain applies one to every job of a Cron:
//
//	c := cronx.New(cronx.WithChain(
//		cronx.Recover(logger),            // a panic is logged, not fatal
//		cronx.SkipIfStillRunning(logger), // no overlapping runs
//	))
//
// and NewChain(...).Then(job) wraps a single job. The default chain is empty,
// as in robfig/cron: a job that panics crashes the program unless Recover
// wraps it.
//
// # Thread safety
//
// A Cron's methods may be called from any goroutine, before and after Start,
// and from inside jobs. A change is in effect when its call returns: after
// Remove returns, the entry does not start again, not even for a tick that
// fired and waits out its jitter or the answer to its claim; after Stop
// returns, no job starts.
//
// # Logging
//
// A Cron and its wrappers log through the Logger interface, a subset of
// github.com/go-logr/logr's: Info and Error, with alternating keys and values,
// so structured loggers plug in. PrintfLogger adapts a *log.Logger and logs
// errors only; VerbosePrintfLogger logs every start, wake-up, run, addition
// and removal too, which helps to see why a job ran when it did:
//
//	cronx.New(cronx.WithLogger(
//		cronx.VerbosePrintfLogger(log.New(os.Stdout, "cron: ", log.LstdFlags))))
//
// The messages and keys are robfig/cron's, so queries written for its logs keep
// working.
//
// # Cluster coordination
//
// With etcd, each tick of a job runs once in the whole cluster, however many
// replicas of the program run the same Cron. Setting BATON_ETCD_ENDPOINTS
// (a comma list) turns it on for a plain New after the import swap, with one
// log line naming the scheduler, mode and instance (through the Cron's Logger
// when WithLogger or WithSlog chose one; else through log/slog's default
// logger, since DefaultLogger prints no Info); WithEtcd or WithElector
// do it from code, and the other BATON_* variables (prefix, identity, TTL,
// TLS, auth) apply as in package election. Explicit options win.
//
// Every run is claimed in etcd before it starts, with one transaction that
// commits only if the job's last claimed tick is older than this one and, in
// leader mode, only while this replica's leadership term is current. A tick
// is named by the schedule's time, never by the clock at the moment of
// firing, so replicas whose clocks disagree still name it alike. A leader
// with many jobs due on one tick claims them in batches, all or none per
// transaction, under the same conditions.
//
// Every tick is claimed at its time, never ahead of it: etcd commits a few
// thousand claims a second, so the last of ten thousand jobs due on one
// minute starts about a second after its tick. A claim ahead would start
// them at once, but a leader that crashed after claiming would leave the
// tick claimed and unrun.
//
// A run's life (run.go) is one goroutine's, from the tick that fires it to
// its record: it waits out its jitter, claims the tick, waits for the run
// it replaces (Replace), runs its attempts and has each recorded. Stop,
// Remove, Shutdown and the end of its term or claim meet it in one place
// (runs.go):
//
//   - Stop gives up every run that has not started — waiting for its jitter,
//     its turn, the run it replaces, or a slot to send its claim in — and
//     gives back the claims of those claimed, so that another replica runs
//     their ticks: in leader mode the successor, whose catch-up claims them.
//     A claim on the wire when Stop comes is awaited for up to half a
//     second: a run whose claim holds starts before Stop returns, and a claim
//     that comes back later is given back. A run that has started is not
//     interrupted, as in robfig/cron; Stop's context is done once it has
//     returned and been recorded. The leader then resigns.
//
//   - Remove gives up the entry's runs that have not started.
//
//   - Shutdown stops as Stop does, and when its context ends cancels the
//     runs still going, with ErrShutdown, waits for their jobs to return
//     and returns: the records etcd has not taken by then are not waited
//     for, and a log line counts the runs not recorded; a leader's
//     resignation is awaited as by Stop. Called from inside a job, it does
//     not wait for the run it is called from.
//
//   - A run's term, ended before the run started, gives it up; once started
//     it goes on under its claim, whose loss (the replica's lease lost, a
//     later tick of a Replace job) ends it.
//
// Coordination has two modes:
//
//   - LeaderMode (default): replicas elect a leader, which alone arms timers
//     and runs jobs. A follower costs no work per tick. On Stop (SIGTERM in a
//     deploy) the leader resigns at once and the next replica fires the next
//     tick on time. A leader that crashes keeps its lease for the TTL; its
//     successor then claims, once, the latest tick that fell in the gap if it
//     is no older than the job's catch-up window (WithCatchUp; without it
//     the misfire grace, WithMisfire: RunOnce within a minute by default, or
//     Skip), for a job that has run before.
//
//   - ClaimMode: every replica schedules, and the first valid claim runs the
//     tick. No failover gap; one transaction per replica per tick, so it
//     suits a few hundred jobs on one second, not thousands (on etcd with
//     auth on, 10,000 on three replicas leave about half of the ticks not
//     run, each reported; see BENCHMARKS.md).
//
// A job's context (ContextFunc, or any ContextJob) is cancelled when its
// claim is lost, before etcd can let another replica run the job (the
// replica's lease lapsing, a later tick of a Replace job), at its timeout,
// or when Shutdown's context ends; not by Stop. InfoFrom(ctx) gives the job's name,
// the nominal tick, the instance and a fencing token. Plain jobs run as they
// always did. Chain wrappers of this package pass the context through, and
// the job's error on to the run history. robfig/cron's own wrappers
// (cron.Recover and the others, or a program's own JobWrapper that calls
// Run) cannot: a ContextJob inside one runs, once per tick as any job, but
// with a background context, no Info, and no error recorded.
//
// A run's fencing token (Info.Fence) is its in-progress marker, in either
// mode: a key created by the claim, bound to the replica's lease, deleted
// when the run ends. It is valid for exactly the run. A run that a stopping
// leader lets finish after it resigned can still make its fenced writes;
// a leader deposed because its lease expired (paused or cut off past the
// TTL) finds its marker gone and its writes refused. Its Revision grows with
// every claim, so it also orders runs for a system outside etcd.
//
// Jobs are named with Named, the same in every replica. An unnamed job gets
// a name derived from its function's symbol (or its type) and a hash of its
// spec, such as "main.sendReport-1c2f3a4b"; adding the same function on the
// same spec again names the copy "...-2", so it stays a separate job as in
// robfig/cron. A copy takes the lowest number no other copy holds, so
// replicas with the same jobs name them alike however often each removed and
// re-added them (a configuration reload). Two Named jobs with one name are an
// error (ErrDuplicateName), with or without etcd, and so is an unnamed job
// whose derived name a Named job holds: giving it another number could name
// it differently on another replica, and run it twice a tick. A name is free
// again when Remove returns. A job added again under its name and spec
// within 10 seconds of its removal (a reload) keeps its place: a tick that
// came due in between runs at once, and an @every job keeps its interval's
// phase. The scheduler is named by WithName, or "cron", "cron-2", ... in the
// order a process creates its Crons.
//
// A job is listed (Jobs, Status, the status page, baton status) while a live
// replica registers it: the replica that publishes — the leader, or every
// replica in claim mode — writes, for each job it has, its spec
// (P/jobs/<scheduler>/<job>/spec) and a registration of its own
// (P/jobs/<scheduler>/<job>/by/<lease>) bound to one of its runners' leases. A
// removed job's registration goes at once, and its spec if the key still
// holds that replica's spec. A job that a deploy drops leaves the listing
// once the replicas that registered it have stopped (their leases revoked)
// or died (their leases expired, within the TTL); Pause and Trigger then
// refuse the name (ErrUnknownJob). Another replica that still has the job
// registers it again when it starts publishing (at Start in claim mode, at
// each term in leader mode). The job's last claimed tick, history
// and pause flag stay in etcd, a few hundred bytes per name: a job added
// again under its name goes on from its last claimed tick, so it never runs a
// tick twice. Nothing deletes them by itself; once no replica has the job,
// etcdctl del --prefix P/jobs/<scheduler>/<job>/ does.
//
// While no replica of the scheduler registers any job (every one stopped or
// dead), Status lists the jobs of the last replica that published, with
// their facts and JobStatus.NotScheduledSince: the publisher writes the
// names of its jobs (P/jobs/<scheduler>/.roster/jobs) at the end of each
// round of specs, only when their hash (.roster/sum, compared in the same
// transaction) differs, and every replica writes when it stops
// (.roster/stopped). NotScheduledSince is that stop, or, after a crash, the
// latest claim, run's end or change of the jobs that etcd has. A job that a
// deploy dropped is not in the new release's roster, so it leaves the
// listing as before. Names of more than 1 MiB in all (tens of thousands of
// jobs) are not written, and such a scheduler's jobs leave the listing with
// their replicas.
//
// WithOverlap(Forbid) skips a tick while a run of the job is in progress on
// any replica. Pause, Resume and Trigger act on the whole cluster, and
// Status reports the leader and each job's last, running and next runs and a
// short history; Control does the same from any process with etcd access.
// Each Trigger call asks for one run, with the time of the call as its tick
// (Info.Tick), which the job's overlap policy treats as it treats a tick:
// under Allow it runs at once, beside any run in progress; under Forbid it
// waits its turn and runs once the run in progress has ended; under Replace
// it replaces the run in progress and the next tick replaces it. So n calls
// at once are n runs side by side under Allow, one after another under
// Forbid, and under Replace each replaces the one before. A trigger runs
// while the job is paused, and a trigger that a leader did not start when
// it stopped is the successor's.
//
// Backfill runs every tick of a job's schedule in [from, to), a past
// range, once in the cluster, now: the replica that schedules the job
// runs them oldest first, one at a time (never two backfilled runs at once,
// and under Forbid and Replace none beside a run of the schedule's), each
// with Info.Backfill set and the tick as Info.Tick. The request and its
// progress (the last tick claimed, moved on in the transaction that claims
// each tick) live in etcd, so the same range asked of every replica is one
// backfill, and a successor goes on from the tick after the last claimed
// when the replica running it stops or dies. A range of more ticks than its
// cap (DefaultMaxBackfill unless given) is refused with their count; a
// paused job's backfill waits for Resume. A tick claimed by a runner that
// dies before its run starts is not run again: at most once, as any tick.
// Status.Jobs[i].Backfills, the status page and baton status show its
// progress; observers get BackfillProgress.
// Keys under P/jobs/ that no Cron could have written (a scheduler or job
// name that is not valid, put with etcdctl) are skipped by Schedulers, Jobs
// and Status, and named by ListSchedulers and Status.Ignored.
//
// In leader mode the leader's set of jobs is what runs. During a rolling
// deploy that adds a job, the new job starts when a replica of the new
// version leads (which the old leader's resignation on SIGTERM brings about);
// a trigger of a job the leader does not have waits for one that has it. In
// claim mode any replica that has the job runs it.
//
// A Cron that makes its client from the environment connects in the
// background: Start never waits for etcd. Each attempt makes a client and
// reads one key through it, within the dial timeout (5 s by default), since
// a client is made without a word to etcd. While etcd does not answer (or
// refuses the credentials), it tries again with backoff, logs each new
// failure through the Cron's Logger, runs nothing, and Status, Pause and Trigger return
// ErrEtcdUnreachable; it schedules as soon as etcd answers. Before Start and
// after Stop they use a client of their own.
//
// Limits: with etcd unreachable no job runs, and scheduling resumes by
// itself. A tick whose claim etcd does not answer is retried until the
// misfire grace, then skipped. In claim mode a tick not yet claimed gives
// way to a later tick of the same job, so after an outage each job runs
// once, for its latest tick, as a new leader does in leader mode. An etcd
// that comes back without its data has forgotten which ticks ran: a tick
// still being retried from before is then given up rather than claimed
// again, but a replica whose clock is behind by more than etcd was down
// could still reach a tick another ran just before the loss (a restart
// takes longer than clocks disagree). A replica whose clock runs
// ahead of the others claims from its own time when it joins, so ticks the
// slower replicas had not reached yet are skipped once; after that, skew
// neither doubles nor drops ticks. A claim held up past the next tick's
// claim, as when etcd's raft leader dies with the claim in flight, finds
// the later tick claimed: that tick is not run, and the Cron logs it as an
// error ("tick not run", "a later tick ... was claimed first"). In claim
// mode, a tick whose claim is being retried, etcd not having taken it,
// when the job's next tick fires gives way to that tick (ReasonOvertaken,
// logged as skipped). A replica
// that dies or is cut off from etcd between a tick's claim and the start of
// its run leaves that tick claimed and unrun: a tick runs at most once, not
// at least once. A Forbid job's in-progress marker is bound to its
// runner's lease, so a runner that dies, pauses or is cut off mid-run keeps
// the job busy until the lease expires, up to the TTL.
//
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
// catches up), after every replica was stopped (the first to start
// catches up), or after a leader's crash. The replica that takes over
// claims the latest tick in the window that it has not fired, under that
// tick's name, so G1 holds: once in the cluster, if the job ran or was
// published before. Earlier ticks of the gap are not run and are counted
// as ReasonNoLeader (over a day at most). The latest tick is searched for
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
//
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
//	                        a clock jump); under RunOnce the grace, under Skip about a second
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
