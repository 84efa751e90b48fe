package main

// etcdMutations break how baton's writes and keepalives meet etcd as
// shipped (auth on, a non-root user): the keys on a lease that each put
// with it checks, the keepalive stream the sessions of a client share and
// what its end says, and ClaimEach's transactions, their cost and their
// conditions. The check runs them with the rest (allMutations).
var etcdMutations = []mutation{
	{
		Name:   "lease-keys-unbounded",
		Breaks: "cost: every marker and registration goes on one lease, whose every put etcd with auth on checks key by key",
		Edits:  []edit{{Marker: "lease-keys", Old: "l.keys >= open", New: "false"}},
		Tests:  []tests{{Pkg: "internal/leasepool", Run: "^TestALeaseTakesKeysWhileEveryPutChecksFewerThanOpen$"}, {Pkg: "cronx", Run: "^TestNoLeaseHoldsManyKeys$"}},
	},
	{
		Name:   "lease-keys-sent-ignored",
		Breaks: "cost: a large batch of markers joins a lease while a smaller one sent before it is unanswered, whose puts, committed after, check the large one's keys",
		Edits:  []edit{{Marker: "lease-keys-sent", Old: "l.keys+n-m >= open", New: "l.keys-m >= open"}},
		Tests:  []tests{{Pkg: "internal/leasepool", Run: "^TestALeaseTakesKeysWhileEveryPutChecksFewerThanOpen$"}, {Pkg: "cronx", Run: "^TestMarkersSentTogetherCheckFewKeysInAnyOrder$"}},
	},
	{
		Name:   "manual-markers-on-any-lease",
		Breaks: "cost: the markers of runs triggered or backfilled at once all go on one lease, whose every put etcd with auth on checks key by key",
		Edits: []edit{
			{Marker: "trigger-marker-counted", Old: "cl.sessions.Reserve(r.ctx, markerLeaseKeys, 1)", New: "cl.sessions.Reserve(r.ctx, 1<<30, 1)"},
			{Marker: "backfill-marker-counted", Old: "cl.sessions.Reserve(r.ctx, markerLeaseKeys, 1)", New: "cl.sessions.Reserve(r.ctx, 1<<30, 1)"},
		},
		Tests: []tests{{Pkg: "cronx", Run: "^TestTriggeredAndBackfilledMarkersShareBoundedLeases$"}},
	},
	{
		Name:   "manual-markers-never-uncounted",
		Breaks: "cost: a triggered or backfilled run's marker stays counted on its lease after the run, so runs one after another take a lease per markerLeaseKeys of them, kept alive for as long as the replica lives",
		Edits:  []edit{{Marker: "released-uncounted", Old: "if !it.keep && it.sess != nil {", New: "if !it.keep && !it.triggered && !it.backfill && it.sess != nil {"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestEndedTriggeredAndBackfilledRunsLeaveTheirLeaseRoom$"}},
	},
	{
		Name:   "replaced-run-stays-counted",
		Breaks: "cost: a Replace job's run replaced before it started keeps its marker's place on the lease, so leases fill with places no marker holds, each kept alive for the life of the replica",
		Edits:  []edit{{Marker: "replaced-uncounted", Old: "co.claims.sessions.Put(c.sess)", New: "_ = c.sess"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestAReplacedRunThatNeverStartedGivesItsPlaceBack$"}},
	},
	{
		Name:   "backoff-ended-stays-counted",
		Breaks: "cost: a run whose retries end in the backoff (replaced, its term or the Cron stopped) keeps its marker's place on the lease, so leases fill with places no marker holds",
		Edits:  []edit{{Marker: "backoff-ended-uncounted", Old: "co.claims.sessions.Put(it.sess)", New: "_ = it.sess"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestARunReplacedInItsRetryBackoffGivesItsPlaceBack$"}},
	},
	{
		Name:   "claim-marker-leases-small",
		Breaks: "cost: claim mode's markers go a few to a lease, leaving a replica a lease per few runs of a crowded tick to keep alive",
		Edits:  []edit{{Marker: "claim-marker-leases", Old: "Reserve(r.ctx, claimMarkerLeaseKeys, 1)", New: "Reserve(r.ctx, markerLeaseKeys, 1)"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestClaimModeMarkersShareLeases$"}},
	},
	{
		Name:   "claimeach-term-removed",
		Breaks: "G1: a batch of claims commits after its term ended",
		Edits:  []edit{{Marker: "claimeach-term", Old: "txn = txn.If(term.Cmp())", New: ""}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestClaimEachTellsEachOutcome$"}},
	},
	{
		Name:   "keepalive-stream-per-keepalive",
		Breaks: "cost: with auth on, every session's keepalive opens a stream, and etcd checks the password at each",
		Edits:  []edit{{Marker: "keepalive-stream-shared", Old: "return r.ttl, r.err", New: "k.mu.Lock(); k.dropLocked(s); k.mu.Unlock(); return r.ttl, r.err"}},
		Tests:  []tests{{Pkg: "election", Run: "^TestSessionsShareOneKeepAliveStream$"}},
	},
	{
		Name:   "keepalive-eof-taken-for-the-refusal",
		Breaks: "a session that sends its keepalive on the stream etcd just ended for another's refusal ends naming io.EOF, not etcd's words (permission denied)",
		Edits:  []edit{{Marker: "keepalive-eof-status", Old: "case errors.Is(err, io.EOF):", New: "case false && errors.Is(err, io.EOF):"}},
		Tests:  []tests{{Pkg: "election", Run: "^TestEverySessionSeesEtcdsRefusalOfItsKeepalive$"}},
	},
	{
		Name:   "claimeach-held-both-ways",
		Breaks: "cost: a steady tick's claims, of keys known to be there, carry each job's puts twice",
		Edits:  []edit{{Marker: "claimeach-held", Old: "it.Held && !withReads", New: "false"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestAHeldItemsPutsGoOnce$"}},
	},
	{
		Name:   "claimeach-held-gone-unclaimed",
		Breaks: "a job whose key was deleted (by hand, or etcd restored without it) is never claimed again by a replica that claimed it before",
		Edits:  []edit{{Marker: "claimeach-held", Old: "it.Held && !withReads", New: "it.Held"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestAHeldItemsPutsGoOnce$"}},
	},
	{
		Name:   "steady-tick-claims-both-ways",
		Breaks: "cost: a leader's claims of jobs it fired before carry each job's puts twice, as at their first tick",
		Edits:  []edit{{Marker: "batch-held", Old: "Held: r.run.fired", New: "Held: false"}},
		Tests:  []tests{{Pkg: "cronx", Run: "^TestASteadyTicksClaimsPutEachKeyOnce$"}},
	},
	{
		Name:   "claimeach-first-unused",
		Breaks: "cost: every crowded tick takes a second transaction of claims, each with both cases and its reads",
		Edits:  []edit{{Marker: "claimeach-first", Old: "case claimed(c.r):", New: "case false && claimed(c.r):"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestACrowdedTickIsOneTransactionOfClaims$"}},
	},
	{
		Name:   "claimeach-groups-past-the-op-limit",
		Breaks: "a full batch of a crowded tick's claims nests more operations along a path than etcd's --max-txn-ops: etcd refuses it and every claim goes one by one",
		Edits:  []edit{{Marker: "claimeach-group", Old: "const eachGroup = 64", New: "const eachGroup = 112"}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestAFullBatchOfTheMostGuardedClaimsIsWithinEtcdsLimits$"}},
	},
	{
		Name:   "claimeach-first-held-only",
		Breaks: "a job that never ran is not claimed by its key's absence, so its first tick is refused",
		Edits:  []edit{{Marker: "claimeach-first-absent", Old: "[]clientv3.Op{clientv3.OpTxn(absent, then, reads)})}, reads)", New: `[]clientv3.Op{clientv3.OpTxn(append(absent, clientv3.Compare(clientv3.CreateRevision(it.Key), "!=", 0)), then, reads)})}, reads)`}},
		Tests:  []tests{{Pkg: "internal/claims", Run: "^TestACrowdedTickIsOneTransactionOfClaims$"}},
	},
}
