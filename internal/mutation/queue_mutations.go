package main

// queueMutations break the policies that queue or replay a job's ticks:
// BufferOne and BufferAll (cronx/buffer.go) and backfill (cronx/backfill.go,
// backfiller.go). The check runs them with the rest (allMutations).
var queueMutations = []mutation{
	{
		Name:   "buffered-tick-not-run",
		Breaks: "BufferOne/BufferAll: a tick buffered behind a run never runs once that run has ended",
		Edits:  []edit{{Marker: "buffer-turn", Old: "return cl.claimBuffered(r)", New: "return held{}, errBufferTaken"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferOneRunsTheTickThatCameDuringARunOnceItEnds$"}},
	},
	{
		Name:   "buffer-overlaps",
		Breaks: "BufferOne/BufferAll: a tick that comes while a run goes on starts beside it instead of waiting",
		Edits:  []edit{{Marker: "buffer-overlap", Old: "opts = append(opts, w.bufferTurn(r.job)...)", New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferOneRunsTheTickThatCameDuringARunOnceItEnds$"}},
	},
	{
		Name:   "buffered-turn-overlaps",
		Breaks: "BufferOne/BufferAll: a buffered tick starts while the run it waits for still goes on",
		Edits:  []edit{{Marker: "buffer-waits", Old: `clientv3.Compare(clientv3.CreateRevision(w.running(r.job.name)), "=", 0).WithPrefix(),`, New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^(TestBufferOneRunsTheTickThatCameDuringARunOnceItEnds|TestBufferSurvivesTheLeadersStop)$"}},
	},
	{
		Name:   "buffer-unbounded",
		Breaks: "BufferOne/BufferAll: the buffer keeps more ticks than its bound",
		Edits:  []edit{{Marker: "buffer-bound", Old: "Count >= int64(bufferBound(r.job.policy.overlap))", New: "Count < 0"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferOneRunsTheTickThatCameDuringARunOnceItEnds$"}},
	},
	{
		Name:   "buffer-drop-uncounted",
		Breaks: "BufferOne/BufferAll: a tick dropped from a full buffer is not reported as a tick not run",
		Edits:  []edit{{Marker: "buffer-drop-counted", Old: "reason = ReasonBufferFull", New: "reason = 0"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferOneRunsTheTickThatCameDuringARunOnceItEnds$"}},
	},
	{
		Name:   "buffer-lost-at-handover",
		Breaks: "BufferOne/BufferAll: a new leader does not run the ticks its predecessor left in a buffer",
		Edits:  []edit{{Marker: "buffer-resume", Old: "co.resumeBuffers(ctx, ts)", New: ""}},
		Tests: []tests{{Pkg: "cronx", Run: "^(TestBufferSurvivesTheLeadersStop|TestBufferedTickRunsWhenItsLeaderAndRunnerIsCutOff)$"},
			{Pkg: "convox/cmd/baton", Run: "^TestCrontabBufferedTickRunsAfterItsLeaderIsKilledOrPaused$"}},
	},
	{
		Name:   "buffer-claim-mode-unjoined",
		Breaks: "BufferOne/BufferAll, claim mode: only the replica that buffered a tick waits for its turn, and one that stops loses it",
		Edits:  []edit{{Marker: "buffer-join", Old: "r.buf = &buffered{key: key, rev: resp.Kvs[0].CreateRevision}", New: "return held{}, claimed"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferInClaimModeRunsTheWaitingTickOnce$"}},
	},
	{
		Name:   "buffer-trigger-overlaps",
		Breaks: "BufferOne/BufferAll: a trigger runs beside the run in progress",
		Edits:  []edit{{Marker: "buffer-trigger", Old: " || buffering(r.job.policy.overlap)", New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferingJobsTriggerWaitsForTheRunInProgress$"}},
	},
	{
		Name:   "backfill-cap-ignored",
		Breaks: "backfill: a range of more ticks than its cap is run, not refused",
		Edits:  []edit{{Marker: "backfill-cap", Old: "if n > max {", New: "if false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBackfillRunsEachTickOnceInOrder$"}},
	},
	{
		Name:   "backfill-tick-run-twice",
		Breaks: "backfill: the claim of a backfilled tick does not record it, and the tick runs again",
		Edits:  []edit{{Marker: "backfill-progress", Old: "next.Last = seq", New: "_ = seq"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBackfillRunsEachTickOnceInOrder$"}},
	},
	{
		Name:   "backfill-claim-unguarded",
		Breaks: "backfill: the claim of a backfilled tick compares neither its progress nor the runs in progress, and replicas in claim mode each run the tick",
		Edits: []edit{
			{Marker: "backfill-once", Old: `clientv3.Compare(clientv3.ModRevision(bf.key), "=", kv.ModRevision)`, New: `clientv3.Compare(clientv3.ModRevision(bf.key), ">", 0)`},
			{Marker: "backfill-alone", Old: "return keys.BackfillMarkers(r.job.name)", New: `return keys.BackfillMarkers(r.job.name) + "-"`},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^TestBackfillInClaimModeRunsEachTickOnceAndAlone$"}},
	},
	{
		Name:   "backfill-runs-overlap",
		Breaks: "backfill: the backfilled runs of an Allow job overlap when replicas in claim mode drive the backfill",
		Edits:  []edit{{Marker: "backfill-alone", Old: "return keys.BackfillMarkers(r.job.name)", New: `return keys.BackfillMarkers(r.job.name) + "-"`}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBackfillInClaimModeRunsEachTickOnceAndAlone$"}},
	},
	{
		Name:   "backfill-pause-ignored",
		Breaks: "backfill: the ticks of a paused job's backfill run",
		Edits:  []edit{{Marker: "backfill-pause", Old: `clientv3.Compare(clientv3.CreateRevision(paused), "=", 0),`, New: `clientv3.Compare(clientv3.CreateRevision(paused), ">", -1),`}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBackfillOfAPausedJobWaitsForResume$"}},
	},
	{
		Name:   "backfill-give-back-skips",
		Breaks: "backfill: a tick whose claim came back after Stop is not given back, and the successor resumes after it: the tick is skipped",
		Edits:  []edit{{Marker: "backfill-give-back", Old: "Then(clientv3.OpPut(bf.key, bf.prev), clientv3.OpDelete(f.Key))", New: "Then(clientv3.OpDelete(f.Key))"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBackfillClaimGivenBackAtStopRunsOnTheSuccessor$"}},
	},
	{
		Name:   "backfill-resume-skips",
		Breaks: "backfill: a successor resumes past the tick after the last one claimed: a tick is skipped on resume",
		Edits:  []edit{{Marker: "backfill-resume", Old: "after = time.Unix(0, v.Last).In(loc)", New: "after = time.Unix(0, v.Last).In(loc).Add(time.Hour)"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBackfillResumesOnASuccessor$"}},
	},
	{
		Name:   "buffer-all-unbounded",
		Breaks: "BufferAll: the buffer keeps ticks past its bound, maxBuffered",
		Edits:  []edit{{Marker: "buffer-all-bound", Old: "return maxBuffered", New: "return 1 << 30"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferAllKeepsAtMostItsBound$"}},
	},
	{
		Name:   "buffered-tick-counted-lost",
		Breaks: "BufferOne/BufferAll: a new leader counts a tick its predecessor left waiting in the buffer as runner_lost",
		Edits:  []edit{{Marker: "lost-buffered", Old: "rs[2].GetResponseRange().Count > 0", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferedTickIsNotCountedAsRunnerLost$"}},
	},
	{
		Name:   "buffer-turn-deletes-key",
		Breaks: "BufferOne/BufferAll: a buffered tick's turn deletes its key, and a turn given back leaves the key to no run that waits",
		Edits: []edit{{Marker: "buffer-key-kept", Old: "clientv3.OpPut(marker, val, clientv3.WithLease(sess.Lease())),",
			New: "clientv3.OpDelete(r.buf.key), clientv3.OpPut(marker, val, clientv3.WithLease(sess.Lease())),"}},
		Tests: []tests{{Pkg: "cronx", Run: "^TestBufferedTurnGivenBackStillHasItsWaiters$"}},
	},
	{
		Name:   "buffer-key-not-taken",
		Breaks: "BufferOne/BufferAll: a buffered tick's run starts and leaves its key in the buffer, ahead of every later tick",
		Edits:  []edit{{Marker: "buffer-taken", Old: "if r.buf == nil {", New: "if true {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^(TestBufferedTurnGivenBackStillHasItsWaiters|TestBufferAllRunsEveryWaitingTickInOrder)$"}},
	},
	{
		Name:   "unanswered-buffered-forgotten",
		Breaks: "a buffered tick's claim etcd committed and whose reply was lost waits for its own marker: the tick never runs, and the job stays busy",
		Edits:  []edit{{Marker: "unanswered-buffer-not-adopted", Old: "unanswered = true", New: "unanswered = false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestABufferedClaimWhoseReplyWasLostRuns$"}},
	},
	{
		Name:   "unanswered-backfill-forgotten",
		Breaks: "a backfilled tick's claim etcd committed and whose reply was lost is taken for another's: the tick runs nowhere, and its marker stops the backfill",
		Edits:  []edit{{Marker: "unanswered-backfill-not-adopted", Old: "unanswered = true", New: "unanswered = false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestABackfillsClaimWhoseReplyWasLostRuns$"}},
	},
	{
		Name:   "buffer-wakes-all",
		Breaks: "BufferAll: every waiting run watches the run in progress, so each deletion wakes every waiting tick and draining k ticks costs about k*k transactions",
		Edits:  []edit{{Marker: "buffer-wake-one", Old: "awaited, prefix = string(before[0].Key), false", New: "_ = before"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestBufferAllDrainCostsAFewRequestsATick$"}},
	},
}
