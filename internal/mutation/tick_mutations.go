package main

// tickMutations break a tick's record (internal/claims/tick.go,
// cronx/tickrecord.go): the claim of a crowded tick of plain jobs by one
// key, its settle, and a new term's settle of what a term before left. The
// check runs them with the rest (allMutations).
var tickMutations = []mutation{
	{
		Name:   "catch-up-read-ignored",
		Breaks: "cost: a handover's catch-up claims every tick its predecessor ran, two write transactions for every 256 jobs, where one read tells",
		Edits:  []edit{{Marker: "catch-up-read-ignored", Old: "if refusals[i] != nil {", New: "if refusals[i] != nil && false {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAHandoversCatchUpReadsTheTicksItsPredecessorRan$"}},
	},
	{
		Name:   "refusals-claimed-unread",
		Breaks: "a read of claim keys refuses no claim of a tick claimed already, so a catch-up claims them all",
		Edits:  []edit{{Marker: "refusals-claimed", Old: "err == nil && seq >= items[i].Seq", New: "err == nil && seq >= items[i].Seq && false"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestRefusalsTellTheClaimsClaimEachWouldRefuse$"}},
	},
	{
		Name:   "refusals-term-removed",
		Breaks: "a deposed leader's catch-up is told its ticks claimed rather than that its term ended",
		Edits:  []edit{{Marker: "refusals-term", Old: "txn = txn.If(term.Cmp())", New: "_ = term"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestRefusalsTellTheClaimsClaimEachWouldRefuse$"}},
	},
	{
		Name:   "gap-ignores-records",
		Breaks: "a successor reports a tick its dead predecessor claimed by a record as fallen while nobody led",
		Edits:  []edit{{Marker: "gap-ignores-records", Old: "seq, ok := recorded[e.name]; ok", New: "seq, ok := recorded[e.name]; ok && false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestATickADeadLeadersRecordClaimedIsNotInItsSuccessorsGap$"}},
	},
	{
		Name:   "tick-record-term-removed",
		Breaks: "G1: a tick's record commits after its term ended",
		Edits:  []edit{{Marker: "tick-term", Old: "claimcond.Term{Key: term.Key, Revision: term.Revision}.Cmp(),", New: ""}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestATicksRecordUnderAnEndedTermIsRefused$"}},
	},
	{
		Name:   "tick-record-absence-unchecked",
		Breaks: "G1: a tick claimed again while its record waits to be settled runs its jobs twice",
		Edits:  []edit{{Marker: "tick-record-absent", Old: `clientv3.Compare(clientv3.CreateRevision(t.Record), "=", 0),`, New: ""}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestATickThatComesRoundAgainRunsNoJobTwice$"}},
	},
	{
		Name:   "tick-record-ignores-claims",
		Breaks: "G1: a tick's record runs a job whose tick was claimed already (a clock stepped back, a catch-up)",
		Edits:  []edit{{Marker: "tick-claimed-ignored", Old: "seq >= t.Seq", New: "false"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestATickThatComesRoundAgainRunsNoJobTwice$"}},
	},
	{
		Name:   "tick-pause-unread",
		Breaks: "a tick's record reads a job's claim key without its pause, so a paused job runs",
		Edits:  []edit{{Marker: "tick-one-range", Old: `clientv3.WithRange(to+"\x00")`, New: "clientv3.WithRange(to)"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestATicksRecordRunsEachJobOnce$"}},
	},
	{
		Name:   "tick-settles-unrun-jobs",
		Breaks: "a settled record moves the claim key of a job paused at the claim or given back, so its tick is lost",
		Edits:  []edit{{Marker: "tick-settles-unrun", Old: "!r.Runs(i) || ran != nil && !ran(i)", New: "i < 0"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestATicksRecordRunsEachJobOnce$"}},
	},
	{
		Name:   "tick-records-unused",
		Breaks: "cost: a crowded tick of plain jobs is claimed job by job, a marker each, not by a few records",
		Edits:  []edit{{Marker: "tick-records-unused", Old: "record && len(batch) >= recordMin", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestACrowdedTickIsClaimedByAFewRecords$"}},
	},
	{
		Name:   "claims-sent-as-fired",
		Breaks: "cost: the claims of a crowded tick go as the loop fires them, in small records that take every flusher while the rest of the tick waits",
		Edits:  []edit{{Marker: "claims-sent-as-fired", Old: "record && b.firing && len(b.pending) < limit", New: "false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestACrowdedTicksClaimsWaitForFullRecordsWhileTheLoopFires$"}},
	},
	{
		Name:   "marker-lease-on-demand",
		Breaks: "cost: a new leader grants its markers' lease only once its first crowded tick's claims need it, and they wait for the grant",
		Edits:  []edit{{Marker: "marker-lease-on-demand", Old: "co.claims.sessions.Reserve(ctx, markerLeaseKeys, 0)", New: "_ = ctx"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestALeaderHasAMarkerLeaseBeforeItsFirstTick$"}},
	},
	{
		Name:   "batch-busy-keys-ignored",
		Breaks: "G1: a claim of a job whose tick's record is not settled yet goes out beside it, finds the job's claim key unmoved and claims the tick again",
		Edits: []edit{
			{Marker: "batch-busy-head", Old: "if !b.busy[r.key] {", New: "if r != nil {"},
			{Marker: "batch-busy-join", Old: "r.term == term && !b.busy[r.key] &&", New: "r.term == term &&"},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^TestAClaimOfAKeyARecordHoldsWaitsUntilItIsSettled$"}},
	},
	{
		Name:   "tick-records-left-unsettled",
		Breaks: "G1: a new term claims the tick of a job its dead predecessor's record claimed, and runs it again",
		Edits:  []edit{{Marker: "tick-records-left-unsettled", Old: "co.settlePending(ctx)", New: ""}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestATicksRecordLeftByADeadLeaderIsSettledByItsSuccessor$"}},
	},
	{
		Name:   "tick-record-unadopted",
		Breaks: "a tick's record that committed with its reply lost is not taken up: its jobs' runs do not start",
		Edits:  []edit{{Marker: "tick-record-unadopted", Old: "rerr == nil && len(recs) == 1", New: "rerr == nil && len(recs) == 1 && recs == nil"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestACrowdedTicksRecordWhoseReplyWasLostRuns$"}},
	},
	{
		Name:   "tick-record-given-back-settled",
		Breaks: "G3: a run of a tick's record given back at Stop has its claim key moved, so its successor does not run the tick",
		Edits:  []edit{{Marker: "tick-record-given-back-settled", Old: "return !s.given[i]", New: "return i >= 0"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestRunsOfARecordGivenBackAtStopRunOnTheSuccessor$"}},
	},
}
