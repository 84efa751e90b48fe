// Package chaos is baton's fault-injection harness: real `baton crontab`
// processes on a three-member etcd cluster, a random schedule of crashes,
// deploys, pauses, partitions, reloads, cold starts, clock skew and etcd
// failures drawn from a printed seed, and a checker that reads the ledger the
// jobs wrote and fails the run on any duplicate tick (a retried run's
// attempts must share its one claim), overlapping Forbid or Replace run,
// stale fenced write or tick missed outside a documented exception. Each
// exception names the limit of baton it stands for, each excused miss is
// reported with the fault behind it, and a run fails unless most of its due
// ticks (70 %) were checked strictly, with no exception covering them.
//
// The package is tests only; README.md explains the faults, the checker's
// rules and the commands:
//
//	go test ./internal/chaos -run TestChaos -v                                   # the CI run, about 4 minutes
//	go test ./internal/chaos -run TestChaos -chaos.duration 30m -timeout 0 -v    # as long as one likes
//	go test ./internal/chaos -run TestChaos -chaos.seed 42 -chaos.duration 2m -v # replay a seed
package chaos
