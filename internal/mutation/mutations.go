package main

import "slices"

// mutations breaks, each in a build of its own, every line a guarantee of
// the coordination rests on; policyMutations (policy_mutations.go) and
// queueMutations do the same for the job policies and the run queue, and
// etcdMutations (etcd_mutations.go) for how writes and keepalives meet
// etcd. Each
// names the smallest set of tests that catches it, so the whole check
// stays within CI's budget; a test named here is the proof of its
// guarantee.
var mutations = []mutation{
	{
		Name:   "forbid-leader-mode",
		Breaks: "Forbid: in leader mode, a tick starts while a run of the job is in progress",
		Edits:  []edit{{Marker: "forbid", Old: "r.job.policy.overlap == Forbid", New: "r.job.policy.overlap == Forbid && ts == nil"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestForbidAcrossLeaders$"}},
	},
	{
		Name:   "forbid-ignored",
		Breaks: "Forbid: in either mode, a tick starts while a run of the job is in progress",
		Edits:  []edit{{Marker: "forbid", Old: "r.job.policy.overlap == Forbid", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestOverlapPolicyAcrossReplicas$"}},
	},
	{
		Name:   "overtaken-in-outage-an-error",
		Breaks: "claim mode: a tick whose claim etcd held up past the next tick's is logged as an error, where the next tick stands for it",
		Edits:  []edit{{Marker: "overtaken-in-outage", Old: "r.term == nil && cl.fired.superseded(r.job.name, r.tick)", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAClaimModeTickOvertakenByItsOwnLaterTickIsASkipNotAnError$"}},
	},
	{
		Name:   "hold-watch-outlives-unlock",
		Breaks: "a lock's hold goes on watching its key after Unlock returns, on a client its caller may close",
		Edits:  []edit{{Marker: "hold-watch-outlives-release", Old: "<-watched", New: ""}},
		Tests:  []tests{{Pkg: "election", Run: "^TestUnlockReturnsOnceItsHoldsWatchHasEnded$"}},
	},
	{
		Name:   "pause-ignored",
		Breaks: "a paused job keeps running",
		Edits:  []edit{{Marker: "pause", Old: "claims.UnlessExists(keys.Paused(r.job.name), ErrPaused),", New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestPauseResumeTriggerStatus$"}},
	},
	{
		Name:   "pause-after-ignored",
		Breaks: "a job WithPauseAfter(n) keeps running after n failures in a row",
		Edits:  []edit{{Marker: "pause-after", Old: "n == 0 || o.Failures < n", New: "n >= 0"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestPauseAfterFailures$"}},
	},
	{
		Name:   "pause-after-overwrites",
		Breaks: "a job's failures overwrite who paused it by hand",
		Edits:  []edit{{Marker: "pause-after-kept", Old: `clientv3.Compare(clientv3.CreateRevision(key), "=", 0)`, New: `clientv3.Compare(clientv3.CreateRevision(key), ">=", 0)`}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestPauseAfterKeepsAPauseByHand$"}},
	},
	{
		Name:   "roster-unread",
		Breaks: "with every replica stopped, baton status and the page list no job",
		Edits:  []edit{{Marker: "roster-unread", Old: "len(live) == 0 && r.jobs[job]", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestStatusListsTheJobsWhenNoReplicaRuns$"}},
	},
	{
		Name:   "roster-lists-dropped",
		Breaks: "with every replica stopped, a job that a deploy dropped is listed again",
		Edits:  []edit{{Marker: "roster-unread", Old: "&& r.jobs[job]", New: "&& r.jobs != nil"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestStatusListsTheJobsWhenNoReplicaRuns$"}},
	},
	{
		Name:   "roster-rewritten",
		Breaks: "cost: every term writes the roster of its jobs, unchanged or not",
		Edits:  []edit{{Marker: "roster-rewritten", Old: `"=", sum)`, New: `"=", sum+"?")`}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestStatusListsTheJobsWhenNoReplicaRuns$"}},
	},
	{
		Name:   "roster-unheard",
		Breaks: "after every replica died, a job is shown not scheduled since before its last run",
		Edits:  []edit{{Marker: "roster-unheard", Old: "r.heard(h.Start.Add(h.Duration))", New: "_ = h"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestStatusListsTheJobsAfterEveryReplicaDied$"}},
	},
	{
		Name:   "stop-unmarked",
		Breaks: "with every replica stopped, a job is shown not scheduled since before the last replica stopped",
		Edits:  []edit{{Marker: "stop-unmarked", Old: "cli.Do(ctx, stop)", New: "_, _ = ctx, stop"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestStatusListsTheJobsWhenNoReplicaRuns$"}},
	},
	{
		Name:   "at-start-again",
		Breaks: "a job WithRunAtStart runs again when a replica of a release that ran it restarts or leads",
		Edits:  []edit{{Marker: "at-start-again", Old: "slices.Contains(ran, co.release)", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRunAtStartOncePerRelease$"}},
	},
	{
		Name:   "at-start-unchecked",
		Breaks: "replicas of a release that start together each run a job WithRunAtStart",
		Edits:  []edit{{Marker: "at-start-unchecked", Old: `clientv3.Compare(clientv3.ModRevision(key), "=", rev)`, New: `clientv3.Compare(clientv3.ModRevision(key), ">=", rev*0)`}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRunAtStartRacingReplicasAskOnce$"}},
	},
	{
		Name:   "at-start-other-release",
		Breaks: "a replica of an older release runs the start of a newer one, with the older code",
		Edits:  []edit{{Marker: "at-start-other-release", Old: `t.release == "" || t.release == co.release`, New: "true"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRunAtStartIsLeftToItsRelease$"}},
	},
	{
		Name:   "last-success-forgotten",
		Breaks: "a job's last success is not recorded, so an alert on it fires for a job that succeeds",
		Edits:  []edit{{Marker: "last-success", Old: "o.LastSuccess, o.Failures = it.end, 0", New: "o.Failures = 0"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestOutcomeOutlivesTheHistory$"}},
	},
	{
		Name:   "deposed-claim-accepted",
		Breaks: "G1: a leader's claims are not bound to its term, so a deposed leader claims ticks",
		Edits:  []edit{{Marker: "under-term", Old: "opts = append(opts, election.UnderTerm(ts.term.Fence))", New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestDeposedLeadersClaimIsRefused$"}},
	},
	{
		Name:   "claim-term-compare-removed",
		Breaks: "G1: a claim made under a term commits after the term ended",
		Edits: []edit{
			{Marker: "claim-term", Old: "conds = append(conds, o.Term.Cmp())", New: ""},
			{Marker: "claimeach-term", Old: "txn = txn.If(term.Cmp())", New: ""},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^TestDeposedLeadersClaimIsRefused$"}},
	},
	{
		Name:   "follower-fires",
		Breaks: "leader mode: replicas that do not lead run jobs too",
		Edits: []edit{
			{Marker: "follower-schedules", Old: "co.term != nil", New: "true"},
			{Marker: "follower-fires", Old: "r.term == nil", New: "false"},
		},
		// Deterministic: a follower that fires races the leader for each
		// tick, so which one runs it is luck; that it fires at all is not.
		Tests: []tests{{Pkg: "cronx", Run: "^TestFollowerFiresNothing$"}},
	},
	{
		Name:   "deadline-from-receive",
		Breaks: "G2: the safe deadline counts from when a keepalive's answer arrived, not from when it was sent",
		Edits:  []edit{{Marker: "deadline-from-send", Old: "r.sent.Add(", New: "o.clock.Now().Add("}},
		Tests:  []tests{{Pkg: "election", Run: "^TestSessionDeadlineCountsFromTheKeepalivesSendTime$"}},
	},
	{
		Name:   "no-deadline-cancellation",
		Breaks: "G2: a leader cut off from etcd goes on working past its safe deadline",
		Edits:  []edit{{Marker: "deadline-cancel", Old: "s.lose(ErrSessionExpired)", New: ""}},
		Tests:  []tests{{Pkg: "election", Run: "^TestSessionDeadlineFollowsAcknowledgedKeepalives$"}},
	},
	{
		Name:   "session-err-ignores-deadline",
		Breaks: "G2: work asks a session past its safe deadline whether it holds, before the session's timer is served, and starts",
		Edits:  []edit{{Marker: "session-err-deadline", Old: "s.ctx.Err() == nil && !s.opts.clock.Now().Before(s.Deadline())", New: "false"}},
		Tests:  []tests{{Pkg: "election", Run: "^TestSessionErrEndsASessionPastItsDeadline$"}},
	},
	{
		Name:   "fence-not-increasing",
		Breaks: "G2: the fencing token of a new term is not higher than its predecessor's",
		Edits:  []edit{{Marker: "term-fence", Old: "Revision: rev", New: "Revision: 1"}},
		Tests:  []tests{{Pkg: "election", Run: "^TestElectionOneLeaderAndGracefulHandover$"}},
	},
	{
		Name:   "stop-without-handover",
		Breaks: "G3: a stopping leader neither resigns nor revokes its lease, so its successor waits for the lease to expire",
		Edits: []edit{
			{Marker: "resign", Old: "Then(clientv3.OpDelete(key))", New: "Then()"},
			{Marker: "revoke", Old: "_, err := s.client.Revoke(ctx, s.lease)", New: "var err error"},
		},
		Tests: []tests{
			{Pkg: "election", Run: "^TestElectionOneLeaderAndGracefulHandover$"},
			{Pkg: "cronx", Run: "^TestGracefulStopOfLeaderMissesNoTick$"},
		},
	},
	{
		Name:   "stale-takeover",
		Breaks: "G3: a replica that takes over fires the entries it left as they were while it followed, and reports a tick its predecessor ran as not run",
		Edits:  []edit{{Marker: "stale-takeover", Old: "if ticking {", New: "if true {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^(TestSuccessorReportsNoTickItsPredecessorRan|TestNewLeaderFiresNoTickOfItsIdleTime)$"}},
	},
	{
		Name:   "leftover-sweep-while-stopping",
		Breaks: "a program that a shell forked is killed a second after the shell dies of baton's SIGTERM, within --grace",
		Edits:  []edit{{Marker: "leftover-sweep-while-stopping", Old: "s.killing || s.stopping", New: "s.killing"}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestRunGraceCoversAForkedProgram$"}},
	},
	{
		Name:   "hold-key-unwatched",
		Breaks: "a lock or once-claim whose key was deleted keeps its context, so its work runs beside the next holder's",
		Edits:  []edit{{Marker: "hold-key-unwatched", Old: "cancel(err)", New: "_ = err"}},
		Tests: []tests{
			{Pkg: "election", Run: "^(TestMutexContextEndsWithTheHold|TestOnceClaimEndsWhenItsMarkerIsDeleted)$"},
			{Pkg: "convox/cmd/baton", Run: "^TestRunLostKeyStopsTheCommand$"},
		},
	},
	{
		Name:   "terminal-foreground",
		Breaks: "a command run from a terminal is not its foreground job, and stops on its first read of it (SIGTTIN) or stty (SIGTTOU)",
		Edits:  []edit{{Marker: "terminal-foreground", Old: "foregroundAttr(cmd.SysProcAttr, 0)", New: ""}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestRunCommandOwnsTheTerminal$"}},
	},
	{
		Name:   "terminal-kept",
		Breaks: "baton does not get its terminal back after the command, and stops (SIGTTOU) on its next line under tostop",
		Edits:  []edit{{Marker: "terminal-given-back", Old: "giveTerminalBack(0, s.cmd, batonGroup)", New: "_ = batonGroup"}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestRunCommandOwnsTheTerminal$"}},
	},
	{
		Name:   "orphan-sweep-kills-all",
		Breaks: "baton as a container's PID 1 kills every orphan it inherits, an exec session's included, not only its commands'",
		Edits:  []edit{{Marker: "orphan-not-a-commands", Old: "o.foreign[pid] || !hasEnv(pid, commandMark)", New: "o.foreign[pid]"}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestPID1SparesOrphansNotOfItsCommands$"}},
	},
	{
		Name:   "orphan-sweep-spares-all",
		Breaks: "a killed supervisor's orphans, a command's processes, outlive its run",
		Edits:  []edit{{Marker: "orphan-not-a-commands", Old: "o.foreign[pid] || !hasEnv(pid, commandMark)", New: "true"}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestNoDescendantOutlivesItsRun$/^lock/supervisor$"}},
	},
	{
		Name:   "terminal-stop-kept",
		Breaks: "a Ctrl-Z on baton's terminal suspends the command, which holds its lock at a standstill, with the terminal",
		Edits:  []edit{{Marker: "terminal-stop-ignored", Old: "_ = syscall.Kill(-s.cmd, syscall.SIGCONT)", New: ""}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestRunCommandOwnsTheTerminal$"}},
	},
	{
		Name:   "once-claim-unchecked",
		Breaks: "baton run --once runs the command though another run holds or recently succeeded its claim",
		Edits:  []edit{{Marker: "once-claim", Old: "!resp.Succeeded", New: "false"}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestRunOnce"}},
	},
	{
		Name:   "timeout-ignored",
		Breaks: "a run goes on past its timeout",
		Edits:  []edit{{Marker: "timeout", Old: "cancel(ErrTimeout)", New: "_ = ErrTimeout"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestTimeoutEndsTheRunAndRecordsIt$"}},
	},
	{
		Name:   "hook-timeout-ignored",
		Breaks: "a hook that hangs is never ended nor reported",
		Edits:  []edit{{Marker: "hook-timeout", Old: "cancel(ErrHookTimeout)", New: "_ = ErrHookTimeout"}},
		Tests: []tests{{Pkg: "cronx", Run: "^TestHooksRunOncePerRunAndAreBounded$"},
			{Pkg: "convox/cmd/baton", Run: "^TestCrontabHooksRunOncePerRun$"}},
	},
	{
		Name:   "hook-not-awaited",
		Breaks: "Stop's context is done while a hook is still being called",
		Edits: []edit{
			{Marker: "hook-awaited", Old: "co.work.add()", New: ""},
			{Marker: "hook-awaited-done", Old: "defer co.work.done()", New: ""},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^TestStopsContextWaitsForAHook$"}},
	},
	{
		Name:   "shutdown-leaves-hooks",
		Breaks: "Shutdown returns, and baton exits, while a hook it ended is still stopping its command",
		Edits:  []edit{{Marker: "shutdown-awaits-hooks", Old: "len(rs.hooks) == 0", New: "true"}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestCrontabHooksRunOncePerRun$"}},
	},
	{
		Name:   "hook-outlives-shutdown",
		Breaks: "Shutdown does not end the hooks being called, so baton's stop waits out their timeout or leaves them",
		Edits:  []edit{{Marker: "hook-shutdown", Old: "(*cancel)(ErrShutdown)", New: "_ = cancel"}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestCrontabHooksRunOncePerRun$"}},
	},
	{
		Name:   "retry-after-claim-lost",
		Breaks: "a failed run is retried after its claim or term ended (the runner stopped in the backoff)",
		Edits: []edit{
			{Marker: "retry-holds", Old: "r.ctx.Err() == nil && co.mayRetry(r)", New: "term != nil"},
			{Marker: "retry-claim", Old: "case <-r.ctx.Done():", New: "case <-make(chan struct{}):"},
			{Marker: "retry-term", Old: "case <-term.Done():", New: "case <-make(chan struct{}):"},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^TestRetriesKeepOneClaim$"}},
	},
	{
		Name:   "replace-not-cancelled",
		Breaks: "Replace: a later tick does not cancel the run in progress",
		Edits:  []edit{{Marker: "replace-cancel", Old: "r.cancel(ErrReplaced)", New: "_ = ErrReplaced"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestReplaceCancelsTheRunInProgress$"}},
	},
	{
		Name:   "replace-overlaps",
		Breaks: "Replace: the new run starts while the run it replaces still runs",
		Edits:  []edit{{Marker: "replace-wait", Old: "others == 0", New: "true"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestReplaceCancelsTheRunInProgress$"}},
	},
	{
		Name:   "stop-runs-a-late-claim",
		Breaks: "G3: a claim that comes back after Stop has given up waiting for it runs, after Stop returned, instead of being given back to the successor",
		Edits:  []edit{{Marker: "late-claim", Old: "case r.ctx.Err() != nil:", New: "case false:"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestStopGivesBackAClaimThatComesBackLate$"}},
	},
	{
		Name:   "start-past-deadline",
		Breaks: "G2: a run whose claim's session is past its safe deadline, the session's timer not yet served, starts its job",
		Edits:  []edit{{Marker: "start-past-deadline", Old: "err := r.co.claims.sessions.Holds(c.sess); err != nil", New: "err := error(nil); err != nil"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNoRunStartsPastItsSessionsDeadline$"}},
	},
	{
		Name:   "claim-slot-wait-unbounded",
		Breaks: "claim mode: a claim that waits for a slot among maxClaims waits past its misfire deadline, and a crowded tick on a slow etcd goes unreported for minutes",
		Edits:  []edit{{Marker: "slot-wait-unbounded", Old: "case <-t.C():", New: "case <-make(chan struct{}):"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAClaimThatFindsNoSlotByItsDeadlineIsReported$"}},
	},
	{
		Name:   "shutdown-leaves-markers",
		Breaks: "G3: Shutdown whose context has ended returns before etcd, which answers, has the records of the runs it ended: their markers outlive the process, and a successor skips a Forbid job's ticks until they lapse",
		Edits:  []edit{{Marker: "shutdown-records-released", Old: "c.runs.await(wctx, c.runs.settled)", New: "_ = wctx"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestShutdownPastItsContextReleasesTheMarkers$"}},
	},
	{
		Name:   "shutdown-waits-for-records",
		Breaks: "G3: Shutdown whose context has ended waits for etcd to take every run's record, past its deadline, when etcd does not answer",
		Edits:  []edit{{Marker: "shutdown-bound", Old: "c.runs.await(context.Background(), c.runs.returned)", New: "c.runs.await(context.Background(), c.runs.settled)"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestShutdownReturnsByItsContextsEndWhenEtcdDoesNotAnswer$"}},
	},
	{
		Name:   "records-not-retried",
		Breaks: "runs that end while etcd does not answer are never written to their histories, though etcd answers again while the Cron runs",
		Edits:  []edit{{Marker: "records-not-retried", Old: "sleep(ctx, backoff)", New: "rc.unrecorded(failed, err); return"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRunsEndedWhileEtcdWasOutAreRecordedOnceItAnswers$"}},
	},
	{
		Name:   "records-one-by-one",
		Breaks: "a batch of records that etcd did not answer is tried again one run at a time, etcdTimeout each, and Stop's context waits for all of them",
		Edits:  []edit{{Marker: "records-serial", Old: "rc.unrecorded(failed, err)", New: "for _, it := range failed { rc.finish(it) }"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestShutdownReturnsByItsContextsEndWhenEtcdDoesNotAnswer$"}},
	},
	{
		Name:   "shutdown-waits-for-its-caller",
		Breaks: "Shutdown called from inside a job waits for that job's own run, and never returns",
		Edits:  []edit{{Marker: "shutdown-inside", Old: "caller, inside := c.callerOf(ctx)", New: "caller, inside := (*run)(nil), false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestShutdownFromInsideAJobReturns$"}},
	},
	{
		Name:   "stop-returns-before-the-call",
		Breaks: "G3: a run whose claim held when Stop came has its job called after Stop returned",
		Edits:  []edit{{Marker: "stop-before-call", Old: "r.stage != stageStarted || !r.called", New: "r.stage != stageStarted"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNoJobStartsAfterStopReturns$"}},
	},
	{
		Name:   "connect-without-probe",
		Breaks: "G6: a Cron whose BATON_ETCD_ENDPOINTS nobody answers logs nothing and Status does not say ErrEtcdUnreachable",
		Edits:  []edit{{Marker: "connect-probe", Old: "_, err := cli.Get(pctx, writes{cn.sc}.dir(), clientv3.WithCountOnly(), clientv3.WithLimit(1))", New: "err := pctx.Err()"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestUnansweredEndpointIsLoggedAndReported$"}},
	},
	{
		Name:   "parse-error-wrapped",
		Breaks: "drop-in: a spec that does not parse gets an error whose text is not robfig/cron's",
		Edits:  []edit{{Marker: "parse-error-robfigs", Old: "return nil, err", New: "return nil, fmt.Errorf(\"cronx: parse %q: %w\", spec, err)"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestParseErrorsAreRobfigs$"}},
	},
	{
		Name:   "catch-up-shown-as-prev",
		Breaks: "drop-in: right after Start, Entries shows as Prev a tick that a new leader's catch-up fired and did not run",
		Edits:  []edit{{Marker: "catch-up-prev", Old: "e.caughtUp = t", New: "e.Prev = t"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestEntriesShowNoPrevForATickThatDidNotRun$"}},
	},
	{
		Name:   "follower-next-in-the-past",
		Breaks: "drop-in: a follower's Entries show a Next gone by",
		Edits:  []edit{{Marker: "follower-next", Old: "!e.Next.IsZero() && !e.Next.After(now)", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestFollowersEntriesShowANextAhead$"}},
	},
	{
		Name:   "replaced-given-back",
		Breaks: "a triggered run of a Replace job that gave way to a later one puts its request back, and a burst of triggers churns etcd for seconds",
		Edits:  []edit{{Marker: "replaced-released", Old: "r.release(c)", New: "co.claims.giveBack(r, c)"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBurstOfTriggersOfAReplaceJobCostsItsRuns$"}},
	},
	{
		Name:   "lost-session-revoked",
		Breaks: "G2: a replica whose session was lost revokes its lease as it makes a new one, and a Forbid job's next tick starts beside a run whose job has not returned, inside the margin",
		Edits:  []edit{{Marker: "lost-not-revoked", Old: "lost = true", New: "lost = true; go p.closeQuietly(l.sess)"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestLostSessionKeepsItsMarkersUntilTheServerExpiresThem$"}},
	},
	{
		Name:   "unanswered-claim-forgotten",
		Breaks: "a claim etcd committed and whose reply was lost is taken for another's: its tick runs nowhere, and its marker keeps a Forbid job busy while the replica lives",
		Edits:  []edit{{Marker: "unanswered-not-adopted", Old: "if unanswered {", New: "if false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAClaimWhoseReplyWasLostRunsItsTick$"}},
	},
	{
		Name:   "unanswered-trigger-forgotten",
		Breaks: "a trigger's claim etcd committed and whose reply was lost is taken for another replica's: the trigger runs nowhere, and its marker keeps a Forbid job's next trigger waiting",
		Edits:  []edit{{Marker: "unanswered-trigger-not-adopted", Old: "unanswered = true", New: "unanswered = false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestATriggersClaimWhoseReplyWasLostRuns$"}},
	},
	{
		Name:   "unanswered-recovery-forgotten",
		Breaks: "a recovery's claim etcd committed and whose reply was lost is given up: the tick whose runner died is not run again, and its marker keeps a Forbid job busy",
		Edits:  []edit{{Marker: "unanswered-recovery", Old: "h, ok := co.claims.adoptUnanswered(r, marker, seq, ts.term.Fence.Revision)", New: "h, ok := held{}, false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestARecoverysClaimWhoseReplyWasLostRuns$"}},
	},
	{
		Name:   "unanswered-marker-kept",
		Breaks: "a run that gives up, etcd away, after a claim whose reply was lost leaves the marker that claim wrote: once etcd is back a Forbid job stays busy while its replica lives",
		Edits:  []edit{{Marker: "unanswered-not-released", Old: "if !unanswered {", New: "if true {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAClaimWhoseReplyWasLostAsEtcdWentAwayFreesItsJob$"}},
	},
	{
		Name:   "unanswered-claim-uncounted",
		Breaks: "a tick whose unanswered claim committed, given up, is reported not run and never counted: its job's last claimed tick passes for one that ran",
		Edits:  []edit{{Marker: "unanswered-claim-uncounted", Old: "if reason != 0 {", New: "if false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAClaimWhoseReplyWasLostAsEtcdWentAwayFreesItsJob$"}},
	},
	{
		Name:   "lost-tick-queued-twice",
		Breaks: "a tick whose runner died, checked twice at once, is run again by the first check and reported lost with its recoveries spent by the second",
		Edits:  []edit{{Marker: "lost-queued-once", Old: "if lc.queued[k] {", New: "if false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestALostTickCheckedTwiceRunsAgainOnce$"}},
	},
	{
		Name:   "lost-record-marker-unread",
		Breaks: "G4's report: a leader that steps down while the runs of a tick it claimed by a record go on has each of them reported runner_lost by its successor, which looks for a marker of the run's own",
		Edits:  []edit{{Marker: "lost-record-marker", Old: "jobkeys.MarkerHolder(string(kv.Value)) == l.holder", New: `jobkeys.MarkerHolder("") == "" && kv == nil`}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestARecordsRunsGoingAtAHandoverAreNotReportedLost$"}},
	},
	{
		Name:   "lost-record-wait-bounded",
		Breaks: "G4's report: a tick whose own marker is gone, whose claimer's runs of the same tick under a record outlast the TTL, is taken for running and never reported",
		Edits: []edit{{Marker: "lost-record-wait-bounded", Old: "l.onRecord = true",
			New: "if l.waiting.IsZero() { l.waiting = now }; if now.Sub(l.waiting) >= co.ttl+lostExpiry { continue }"}},
		Tests: []tests{{Pkg: "cronx", Run: "^TestATickWithoutItsMarkerWaitsForItsClaimersRecordsOfTheTick$"}},
	},
	{
		Name:   "catch-up-term-before-forgotten",
		Breaks: "a tick fired as its term ended, its claim still out when the same replica leads again, is neither caught up by the next term nor run",
		Edits:  []edit{{Marker: "catch-up-term-before", Old: "if co.mode == LeaderMode &&", New: "if false && co.mode == LeaderMode &&"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestATickFiredAsItsTermEndedIsCaughtUpByTheNextTerm$"}},
	},
	{
		Name:   "shutdown-caller-counted",
		Breaks: "Shutdown given a job's context leaves any one run out of its wait, not that job's: it returns while another run is in progress",
		Edits:  []edit{{Marker: "shutdown-caller-named", Old: "if r == nil {", New: "if true {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestShutdownGivenAJobsContextWaitsForTheOtherRuns$"}},
	},
	{
		Name:   "shutdown-skips-resignation",
		Breaks: "G3: Shutdown past its context returns before the leader has resigned, and a process that exits next leaves its successor waiting out the TTL",
		Edits:  []edit{{Marker: "shutdown-resigns", Old: "done := <-stopped", New: "var done <-chan struct{}"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestShutdownPastItsContextStillResigns$"}},
	},
	{
		Name:   "start-allowance-none",
		Breaks: "a deploy's SIGTERM that comes just after a tick's command started kills it before it can catch the signal",
		Edits:  []edit{{Marker: "start-allowance", Old: "hold := min(startAllowance-time.Since(started), j.grace)", New: "hold := min(-time.Since(started), j.grace)"}},
		Tests:  []tests{{Pkg: "convox/cmd/baton", Run: "^TestCrontabStopSparesACommandJustStarted$"}},
	},
	{
		Name:   "runs-of-entry-unindexed",
		Breaks: "a new term does not catch up a tick fired under the term before and not started, and Remove leaves a job's waiting run, since no run is found by its entry",
		Edits:  []edit{{Marker: "runs-of-entry", Old: "rs.ofEntry[r.job.entry] = append(rs.ofEntry[r.job.entry], r)", New: ""}},
		Tests: []tests{{Pkg: "cronx", Run: "^TestATickFiredAsItsTermEndedIsCaughtUpByTheNextTerm$"},
			{Pkg: "cronx", Run: "^TestRemoveEndsARunThatHasNotStarted$"}},
	},
	{
		Name:   "remove-leaves-a-waiting-run",
		Breaks: "Remove: a run that fired and waits for its jitter starts after Remove returned",
		Edits:  []edit{{Marker: "remove-waiting", Old: "c.runs.remove(id)", New: "time.Time{}"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRemoveEndsARunThatHasNotStarted$"}},
	},
	{
		Name:   "stop-interrupts-runs",
		Breaks: "G5: Stop cancels the context of a run that has started, which robfig/cron's Stop never interrupts",
		Edits:  []edit{{Marker: "stop-spares-started", Old: "r.stage == stageFired || r.stage == stageClaimed", New: "true"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestStopDoesNotInterruptARunAlone$"}},
	},
	{
		Name:   "claim-gate-open",
		Breaks: "a crowded tick or takeover holds a goroutine per job's claim, whose structure stays in the heap for good",
		Edits:  []edit{{Marker: "claim-gate", Old: "if g.waiting >= maxClaimWaiters {", New: "if false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestACrowdedTakeoverHoldsAFewGoroutines$"}},
	},
	{
		Name:   "term-end-keeps-runs",
		Breaks: "a run of a term that ended, not yet started, waits on as if its term held (its claim then refused), and its replica is not idle",
		Edits:  []edit{{Marker: "term-end-abandons", Old: "if r.term == ts && r.stage != stageStarted {", New: "if false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^(TestARunFiredUnderATermThatEndedIsGivenUp|TestARunWaitingInItsTermWhenTheTermEndsIsGivenUp)$"}},
	},
	{
		Name:   "fired-after-its-term-kept",
		Breaks: "a run fired as its term ended is not given up",
		Edits:  []edit{{Marker: "fired-after-its-term", Old: "if r.term != nil && r.term.ctx.Err() != nil {", New: "if false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestARunFiredUnderATermThatEndedIsGivenUp$"}},
	},
	{
		Name:   "records-start-a-recorder-each",
		Breaks: "runs that end a few at a time are recorded one transaction pair each, up to maxFinishes at once: a steady minute of spread jobs costs etcd half as many requests again",
		Edits:  []edit{{Marker: "record-batch-waits", Old: "start := q.recorders == 0 || q.recorders < maxFinishes && len(q.items) > q.recorders*recordBatch", New: "start := q.recorders < maxFinishes"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRunsEndingTogetherAreRecordedInAFewTransactions$"}},
	},
	{
		Name:   "records-a-pair-per-256-runs",
		Breaks: "a crowded tick's records cost a read and a write per 256 runs, close to one request per hundred jobs by themselves",
		Edits:  []edit{{Marker: "record-batch", Old: "recordBatch      = 1024", New: "recordBatch      = 256"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAFullBatchOfRecordsIsTwoTransactions$"}},
	},
	{
		Name:   "records-read-in-one-level",
		Breaks: "a full batch's reads of histories and outcomes go in one level of one transaction, more operations than etcd's --max-txn-ops: etcd refuses it and the batch goes unrecorded",
		Edits:  []edit{{Marker: "record-read-group", Old: "recordReadGroup  = maxTxnOps - 24", New: "recordReadGroup  = 2 * recordBatch"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAFullBatchOfRecordsIsTwoTransactions$"}},
	},
	{
		Name:   "records-read-in-groups-past-the-limit",
		Breaks: "a full batch's reads go in groups that, with the level around them, pass etcd's --max-txn-ops (20 groups of 112 in one transaction): etcd refuses it and the batch goes unrecorded",
		Edits:  []edit{{Marker: "record-read-group", Old: "recordReadGroup  = maxTxnOps - 24", New: "recordReadGroup  = maxTxnOps - 16"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAFullBatchOfRecordsIsTwoTransactions$"}},
	},
	{
		Name:   "records-written-past-the-request-limit",
		Breaks: "runs whose histories hold long errors are written in one transaction larger than etcd's --max-request-bytes: etcd refuses it and their records are lost",
		Edits:  []edit{{Marker: "record-bytes-unbounded", Old: "for to < len(batch) && bytes+sizes[to] <= recordBytes {", New: "for to < len(batch) {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAFullBatchOfRecordsIsTwoTransactions$"}},
	},
	{
		Name:   "claims-of-long-keys-past-the-request-limit",
		Breaks: "a batch of claims of long keys, larger than etcd's --max-request-bytes, is refused whole: a term's catch-up of jobs with the longest names is refused, as if etcd refused every write",
		Edits:  []edit{{Marker: "claimeach-unsplit", Old: "if TooLarge(err) && len(ops) > 1 {", New: "if false {"}},
		Tests: []tests{{Pkg: "internal/claims", Run: "^TestAFullBatchOfTheMostGuardedClaimsIsWithinEtcdsLimits$"},
			{Pkg: "cronx", Run: "^TestJobsOfTheLongestNamesAreClaimedWithinEtcdsLimits$"}},
	},
	{
		Name:   "term-specs-past-the-request-limit",
		Breaks: "a term checks the specs of publishBatch jobs in one read however long their names: etcd refuses it, and a leader of 2000 jobs with the longest names publishes none of their specs",
		Edits:  []edit{{Marker: "term-batch-unbounded", Old: "if i > 0 && bytes > publishBytes {", New: "if false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestALeaderOfLongNamedJobsPublishesEverySpec$"}},
	},
	{
		Name:   "gate-held-through-the-run",
		Breaks: "a run keeps its place at the claim gate until its job returns: a tick of more long jobs than the gate's places starts only as many as it has",
		Edits:  []edit{{Marker: "gate-first-answer", Old: "r.answered()", New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestJobsOfACrowdedTickThatRunLongAllStart$"}},
	},
	{
		Name:   "nil-job-accepted",
		Breaks: "G6: a nil job is scheduled without a word, and crashes the program at its first run",
		Edits:  []edit{{Marker: "nil-job", Old: "case isNilJob(cmd):", New: "case false:"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNilScheduleOrJobIsAnError$"}},
	},
}

// allMutations is every mutation the check knows.
func allMutations() []mutation {
	return slices.Concat(policyMutations, mutations, queueMutations, tickMutations, etcdMutations)
}
