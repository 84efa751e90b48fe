package main

// mutations breaks, each in a build of its own, every line a guarantee
// rests on. Each names the smallest set of tests that catches it, so the
// whole check stays within CI's budget; a test named here is the proof of
// its guarantee.
var mutations = []mutation{
	{
		Name:   "catch-up-disabled",
		Breaks: "G4: the successor of a crashed leader never runs the tick missed in the gap (RunOnce)",
		Edits:  []edit{{Marker: "catch-up", Old: "co.misfire == RunOnce &&", New: "false &&"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestCrashedLeadersMissedTickRunsOnceLate$"}},
	},
	{
		Name:   "misfire-skip-ignored",
		Breaks: "G4: a job with misfire Skip runs a tick missed in a failover anyway",
		Edits: []edit{
			{Marker: "catch-up", Old: "co.misfire == RunOnce &&", New: ""},
			{Marker: "misfire-grace", Old: "sc.misfire == RunOnce", New: "true"},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^TestCrashedLeadersMissedTickRunsOnceLate$"}},
	},
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
		Name:   "pause-ignored",
		Breaks: "a paused job keeps running",
		Edits:  []edit{{Marker: "pause", Old: "claims.UnlessExists(co.keys.paused(r.job.name), ErrPaused),", New: ""}},
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
			{Marker: "claimall-term", Old: `add(fmt.Sprintf("term %s %d", o.Term.Key, o.Term.Revision), o.Term.Cmp())`, New: ""},
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
		Name:   "remove-leaves-a-waiting-run",
		Breaks: "Remove: a run that fired and waits for its jitter starts after Remove returned",
		Edits:  []edit{{Marker: "remove-waiting", Old: "c.runs.remove(id)", New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRemoveEndsARunThatHasNotStarted$"}},
	},
	{
		Name:   "stop-interrupts-runs",
		Breaks: "G5: Stop cancels the context of a run that has started, which robfig/cron's Stop never interrupts",
		Edits:  []edit{{Marker: "stop-spares-started", Old: "r.stage == stageFired || r.stage == stageClaimed", New: "true"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestStopDoesNotInterruptARunAlone$"}},
	},
	{
		Name:   "nil-job-accepted",
		Breaks: "G6: a nil job is scheduled without a word, and crashes the program at its first run",
		Edits:  []edit{{Marker: "nil-job", Old: "case isNilJob(cmd):", New: "case false:"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNilScheduleOrJobIsAnError$"}},
	},
}
