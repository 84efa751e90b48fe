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
// came due in between runs at once, so does a tick whose run the removal
// gave up before it started (it waited for its jitter, its claim or the run
// it replaces), and an @every job keeps its interval's phase. The scheduler is named by WithName, or "cron", "cron-2", ... in the
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
package cronx

// The package documentation goes on in doc_jobpolicies.go and
// doc_observe.go, in that order.
