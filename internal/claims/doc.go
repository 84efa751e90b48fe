// Package claims holds the claims of election that only baton's scheduler
// makes: in-progress markers and the conditions that keep runs from
// overlapping or a paused job from running, claims of many jobs in one
// transaction, a tick's record that claims one tick of many jobs by one
// key and one marker (tick.go), and giving a claim back or its marker up.
//
// Its options are election.ClaimOption values, so they mix with
// election.ClaimedBy and election.UnderTerm in election.ClaimSeq, and a
// batch checks each item's conditions just as ClaimSeq would: both build
// their transactions from internal/claimcond.
package claims
