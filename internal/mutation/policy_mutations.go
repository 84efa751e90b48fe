package main

// policyMutations breaks the lines the job policies rest on: catch-up
// windows, bounds and a limit on runs, recovery of a dead run, and the
// gap a new term reports. Each names the smallest set of tests that
// catches it, as mutations does.
var policyMutations = []mutation{
	{
		Name:   "catch-up-disabled",
		Breaks: "G4: the successor of a crashed leader never runs the tick missed in the gap (RunOnce)",
		Edits:  []edit{{Marker: "catch-up", Old: "sc.misfire == RunOnce &&", New: "false &&"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestCrashedLeadersMissedTickRunsOnceLate$"}},
	},
	{
		Name:   "misfire-skip-ignored",
		Breaks: "G4: a job with misfire Skip runs a tick missed in a failover anyway",
		Edits: []edit{
			{Marker: "catch-up", Old: "sc.misfire == RunOnce &&", New: ""},
			{Marker: "misfire-grace", Old: "sc.misfire == RunOnce", New: "true"},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^TestCrashedLeadersMissedTickRunsOnceLate$"}},
	},
	{
		Name:   "catch-up-window-ignored",
		Breaks: "a job WithCatchUp(window) catches up under the Cron's misfire grace instead of its window",
		Edits:  []edit{{Marker: "catch-up-window", Old: "p != nil && p.catchUp.set", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestCatchUpWindowAfterEveryReplicaStopped$"}},
	},
	{
		Name:   "catch-up-deadline-ignored",
		Breaks: "a job WithCatchUp(window) gives up a live tick's claim that etcd does not answer at the misfire grace, not its window",
		Edits:  []edit{{Marker: "catch-up-deadline", Old: "p != nil && p.catchUp.set && !r.triggered()", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestCatchUpWindowBoundsALiveTicksClaim$"}},
	},
	{
		Name:   "catch-up-walks-the-window",
		Breaks: "a catch-up window of a year walks every tick of the year to find the latest",
		Edits:  []edit{{Marker: "catch-up-search", Old: "for range walkTicks {", New: "for {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestLatestTickSearchesNotWalks$"}},
	},
	{
		Name:   "max-runs-unclaimed",
		Breaks: "a job WithMaxRuns(n) runs more than n times in the cluster: its claims are not counted",
		Edits:  []edit{{Marker: "max-runs", Old: "b.bounded()", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestMaxRunsAreCountedAcrossAFailover$"}},
	},
	{
		Name:   "max-runs-uncompared",
		Breaks: "a job WithMaxRuns(n) runs more than n times in the cluster: a claim past the count commits",
		Edits:  []edit{{Marker: "max-runs-compare", Old: `clientv3.Compare(clientv3.Version(c.Key), "<", c.Max)`, New: `clientv3.Compare(clientv3.Version(c.Key), ">", int64(-1))`}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestCountedClaimsStopAtTheirMax$"}, {Pkg: "cronx", Run: "^TestMaxRunsAreCountedAcrossAFailover$"}},
	},
	{
		Name:   "max-runs-ticks-on",
		Breaks: "a job at its WithMaxRuns keeps firing ticks that etcd refuses, a transaction each, for ever",
		Edits:  []edit{{Marker: "max-runs-done", Old: "!r.job.bounds.done.CompareAndSwap(false, true)", New: "r.job.bounds.done.Load()"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestMaxRunsAreCountedAcrossAFailover$"}},
	},
	{
		Name:   "max-runs-buffered-uncounted",
		Breaks: "a BufferOne or BufferAll job's tick put in its buffer is not counted against its WithMaxRuns, and the job runs more than its maximum",
		Edits:  []edit{{Marker: "max-runs-buffered", Old: "if counter != nil {", New: "if false && counter != nil {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestMaxRunsCountABufferedTick$"}},
	},
	{
		Name:   "start-at-ignored",
		Breaks: "a job WithStartAt(t) runs ticks before t",
		Edits:  []edit{{Marker: "start-at", Old: "!b.start.IsZero() && t.Before(b.start)", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBoundedScheduleStartsAndEnds$"}},
	},
	{
		Name:   "end-at-ignored",
		Breaks: "a job WithEndAt(t) runs ticks at and past t",
		Edits:  []edit{{Marker: "end-at", Old: "!b.end.IsZero() && !next.Before(b.end)", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBoundedScheduleStartsAndEnds$"}},
	},
	{
		Name:   "catch-up-unclaimed-forgotten",
		Breaks: "a replica that fired a tick its term's end left unclaimed (etcd went down) does not catch it up when it leads again",
		Edits:  []edit{{Marker: "catch-up-unclaimed", Old: "t.After(e.given()) || co.unclaimed.take(e.ID, t)", New: "t.After(e.given())"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestCatchUpOfATickFiredAsEtcdWentDown$"}},
	},
	{
		Name:   "catch-up-never-run",
		Breaks: "G3/G4: a successor does not catch up the tick of a job that never ran, given up at a Stop or left by a crash",
		Edits:  []edit{{Marker: "catch-up-never-run", Old: "o.Known = &claimcond.Known{Key: known, Revision: rev}", New: "_ = known"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^(TestNeverRunJobsTickStoppedInItsJitterRunsOnTheSuccessor|TestStopRightAfterACrowdedFirstTickMissesNone|TestCrowdedFirstTickOfACutOffLeaderRunsOnItsSuccessor|TestStopAfterACrowdedFirstTickLosesNone)$"}},
	},
	{
		Name:   "runner-lost-unreported",
		Breaks: "G4: a tick claimed by a leader lost before it started the run is neither run nor counted as not run",
		Edits:  []edit{{Marker: "runner-lost", Old: "errors.As(err, &ce) && r.catchUp", New: "false && errors.As(err, &ce) && r.catchUp"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^(TestTicksALostLeaderClaimedAreCountedNotRun|TestLeaderKilledAfterACrowdedTickLosesNoTick)$"}},
	},
	{
		Name:   "lost-given-back-counted",
		Breaks: "G4: a tick a new term found claimed, whose claim was then given back unrun, is counted runner_lost and run nowhere",
		Edits:  []edit{{Marker: "lost-given-back", Old: "givenBack(rs[3].GetResponseRange().Kvs, l.tick) &&", New: "false &&"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestATickFoundClaimedAndGivenBackIsCaughtUp$"}},
	},
	{
		Name:   "given-back-as-claim-lost",
		Breaks: "G4: a tick claimed as its term's session lapsed, and given back unrun, is counted as its claim lost, and the next term does not run it",
		Edits: []edit{{Marker: "given-back-by-term-session", Old: "co.claims.sessions.Holds(c.sess) != nil:",
			New: "co.claims.sessions.Holds(c.sess) != nil, errors.Is(why, election.ErrSessionExpired):"}},
		Tests: []tests{{Pkg: "cronx", Run: "^TestATickGivenBackAsItsTermLapsesRunsInTheNextTerm$"}},
	},
	{
		Name:   "recovery-opt-in-ignored",
		Breaks: "WithRecovery: a tick whose runner died mid-run is counted not run and never run again, whatever the job asks",
		Edits:  []edit{{Marker: "recovery-opt-in", Old: "e.policy.recovery == 0", New: "e.policy.recovery >= 0"}},
		Tests: []tests{{Pkg: "cronx", Run: "^TestRunKilledMidRunRunsAgainOnceWithRecovery$"},
			{Pkg: "convox/cmd/baton", Run: "^TestCrontabRecoverRunsAKilledOrPausedRunAgain$"}},
	},
	{
		Name:   "recovery-unbounded",
		Breaks: "WithRecovery: a tick is run again more times than the job allows",
		Edits:  []edit{{Marker: "recovery-bound", Old: "n > e.policy.recovery", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryRunsATickAgainAtMostNTimes$"}},
	},
	{
		Name:   "recovery-reruns-recorded",
		Breaks: "WithRecovery: a run that ended and was recorded (or that Shutdown ended) is run again",
		Edits: []edit{
			{Marker: "lost-recorded", Old: "ranTick(hist, l.tick)", New: "ranTick(hist, l.tick) && false"},
			{Marker: "recovery-recorded", Old: "ranTick(records, tick) || o.Tick >= tick.UnixNano()", New: "false"},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^(TestRunKilledMidRunRunsAgainOnceWithRecovery|TestRecoveryLeavesARunShutdownEnded)$"}},
	},
	{
		Name:   "recovery-reruns-evicted",
		Breaks: "WithRecovery: a tick that ran and was recorded is run again once later records pushed its record out of the history",
		Edits:  []edit{{Marker: "recovery-recorded", Old: " || o.Tick >= tick.UnixNano()", New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryLeavesATickWhoseRecordLeftTheHistory$"}},
	},
	{
		Name:   "recovery-tick-forgotten",
		Breaks: "WithRecovery: a record does not keep its tick as the latest recorded, and a tick whose record left the history is run again",
		Edits:  []edit{{Marker: "recovery-tick-kept", Old: "seq > o.Tick", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryLeavesATickWhoseRecordLeftTheHistory$"}},
	},
	{
		Name:   "recovery-overlaps",
		Breaks: "WithRecovery: a tick of a BufferOne, BufferAll or Replace job runs again beside another run of the job",
		Edits:  []edit{{Marker: "recovery-overlap", Old: "rf.overlap == Allow", New: "rf.overlap != Forbid"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryWaitsForNoOtherRun$"}},
	},
	{
		Name:   "recovery-refusal-silent",
		Breaks: "WithRecovery: a tick whose recovery could not be claimed (a run in progress, a pause, a later claim) is neither run nor counted",
		Edits:  []edit{{Marker: "recovery-refusal-told", Old: "refusal.tell(resp.Responses, rev, histRev, lastRev)", New: "_ = lastRev"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryWaitsForNoOtherRun$"}},
	},
	{
		Name:   "recovered-run-late",
		Breaks: "WithRecovery: a run again of a tick whose runner died puts its age into the lateness histogram",
		Edits:  []edit{{Marker: "recovered-no-lateness", Old: "r.scheduled() && r.recovered == 0", New: "r.scheduled()"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryLeavesATickOlderThanTheLatest$"}},
	},
	{
		Name:   "recovery-runs-overtaken",
		Breaks: "WithRecovery: a tick whose runner was lost runs again after a later tick of the job was claimed",
		Edits:  []edit{{Marker: "recovery-overtaken", Old: "claimed > seq", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryLeavesATickOvertaken$"}},
	},
	{
		Name:   "recovery-term-look-skipped",
		Breaks: "WithRecovery: a run that died past the misfire grace after its tick (a long run) is neither run again nor counted",
		Edits:  []edit{{Marker: "recovery-term-look", Old: "e.name != \"\" && e.policy.recovery > 0", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryLeavesATickOlderThanTheLatest$"}},
	},
	{
		Name:   "recovery-reruns-old-ticks",
		Breaks: "WithRecovery: a new term runs again a tick whose next one came since, a run that ended long ago with no record",
		Edits:  []edit{{Marker: "recovery-latest", Old: "!next.IsZero() && !next.After(start)", New: "false && !next.IsZero()"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRecoveryLeavesATickOlderThanTheLatest$"}},
	},
	{
		Name:   "gap-never-run-uncounted",
		Breaks: "G4: under Skip, the tick of a job that never ran, fallen while nobody led, is not counted as not run",
		Edits:  []edit{{Marker: "gap-never-run", Old: "resp.Responses[3*i+1].GetResponseRange().Count > 0", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNeverRunJobsTickInAGapIsCountedUnderSkip$"}},
	},
	{
		Name:   "catch-up-before-published",
		Breaks: "a successor runs a tick of a never-run job that came due before the cluster had the job (a leader started after the tick, published the job and handed over)",
		Edits:  []edit{{Marker: "known-since", Old: "Bound(seq+1)", New: `"~"`}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNeverRunJobsTickBeforeItsPublicationIsNotCaughtUp$"}},
	},
	{
		Name:   "spec-changes-over-the-txn-limit",
		Breaks: "jobs added by the dozen to a Cron that publishes are never published: each write asks more of etcd than its limit on a transaction's operations, and is retried for ever",
		Edits:  []edit{{Marker: "spec-change-batch", Old: "maxTxnOps / 4", New: "maxTxnOps / 2"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestJobsAddedInBulkWhileLeadingArePublished$"}},
	},
	{
		Name:   "term-registrations-over-the-txn-limit",
		Breaks: "a term of more than 3072 jobs never writes their registrations: a transaction of regBatch of them, in 42 groups of 96, asks more of etcd than its limit on a transaction's operations, and is retried for ever",
		Edits:  []edit{{Marker: "reg-group", Old: "maxTxnOps / 2", New: "maxTxnOps - 32"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNoLeaseHoldsManyKeys$"}},
	},
	{
		Name:   "term-registrations-2000-a-lease",
		Breaks: "a term's registrations take a lease per 2000 jobs: 50,000 jobs keep 25 leases alive where 13 do, a keepalive each every TTL/3",
		Edits:  []edit{{Marker: "reg-batch", Old: "regBatch = 2 * publishBatch", New: "regBatch = publishBatch"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNoLeaseHoldsManyKeys$"}},
	},
	{
		Name:   "spec-check-trusted",
		Breaks: "a new term takes every spec as etcd holds it: a spec another version changed, or one never written, stays wrong",
		Edits:  []edit{{Marker: "spec-check-trusted", Old: "!r.GetResponseTxn().GetSucceeded()", New: "r == nil"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNewLeaderPublishesEverySpec$"}},
	},
	{
		Name:   "spec-check-ignores-marks",
		Breaks: "a new term's check of its specs passes a job with no publication mark, which then never gets one",
		Edits:  []edit{{Marker: "spec-check-mark", Old: "cmps = append(cmps, spec, mark)", New: "cmps = append(cmps, spec); _ = mark"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNewLeaderPublishesEverySpec$"}},
	},
	{
		Name:   "publication-mark-not-mended",
		Breaks: "a spec an older version published, with no publication mark, never gets one: its job's ticks are never caught up before it first runs",
		Edits:  []edit{{Marker: "mark-unchanged", Old: "Then(marks...)", New: "Then(marks[:0]...)"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNewLeaderPublishesEverySpec$"}},
	},
	{
		Name:   "not-leader-refusal-forgotten",
		Breaks: "G3: a tick whose claim etcd refused as not under the current term, before the run learnt its term had ended (a paused leader waking past its TTL), is never caught up when the replica leads again",
		Edits:  []edit{{Marker: "not-leader-unclaimed", Old: "r.ctx.Err() != nil, errors.Is(err, election.ErrNotLeader)", New: "r.ctx.Err() != nil"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestATickRefusedAsItsTermEndsIsCaughtUpByTheNextTerm$"}},
	},
	{
		Name:   "reload-gives-up-a-tick",
		Breaks: "a reload while a run of the job has not started (its jitter, its claim, or a Replace run waiting for the one it replaces) loses that tick: the run is given up with the removal and the job added again goes on from the next tick",
		Edits:  []edit{{Marker: "reload-given-up", Old: "again = r.givenUp", New: "_ = r.givenUp"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestReloadWhileAReplaceRunWaitsRunsItsTick$"}},
	},
	{
		Name:   "gap-since-ignored",
		Breaks: "G4: the ticks of a never-run job that fell in a long gap before the lost leader's lease are not counted as not run",
		Edits:  []edit{{Marker: "gap-since", Old: "err == nil", New: "err != nil"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestNeverRunJobsTicksSincePublicationAreCountedAfterAGap$"}},
	},
}
