package claims

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkACrowdedTicksClaims measures how long a leader's claims of one
// tick of 10,000 jobs (BATON_BENCH_JOBS) take to commit, the time by
// which the tick's runs may start: by ClaimEach, as a leader sends them
// (MaxEach to a transaction, 4 in flight, each batch's markers on a lease
// of their own), and by a tick's records (TickChunks, every record's claim
// at once), with the records' settle after it. Each on etcd with auth on
// and a non-root user, as `baton etcd` ships it (a key space of the shared
// member), and on a member without auth. Each iteration is the next tick
// of the same jobs, every claim key written by the one before, and each
// job has an outcome, as a job that has run has, which lies between its
// claim key and its pause.
func BenchmarkACrowdedTicksClaims(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BATON_BENCH_JOBS")); err == nil {
		n = v
	}
	for _, etcd := range []struct {
		name   string
		client func(b *testing.B) *clientv3.Client
	}{
		{"auth=on", func(b *testing.B) *clientv3.Client { return etcdtest.Shared(b).Client(b) }},
		{"auth=off", func(b *testing.B) *clientv3.Client { return etcdtest.Start(b).Client(b) }},
	} {
		for _, how := range []struct {
			name  string
			claim func(b *testing.B, cli *clientv3.Client, term election.Fence, jobs []TickJob, seq int64) (settle time.Duration)
		}{
			{"each", claimEachTick},
			{"record", claimTickRecords},
		} {
			b.Run(etcd.name+"/"+how.name, func(b *testing.B) {
				cli := etcd.client(b)
				ctx := context.Background()
				resp, err := cli.Put(ctx, "/bench/leader", "me")
				if err != nil {
					b.Fatal(err)
				}
				term := election.Fence{Key: "/bench/leader", Revision: resp.Header.Revision}
				jobs := tickJobs("/bench/", n)
				withOutcomes(b, cli, "/bench/", jobs)
				how.claim(b, cli, term, jobs, 1) // every claim key written
				b.ResetTimer()
				var claimed, settled time.Duration
				for i := range b.N {
					start := time.Now()
					settle := how.claim(b, cli, term, jobs, int64(i+2))
					claimed += time.Since(start) - settle
					settled += settle
				}
				b.ReportMetric(float64(claimed.Milliseconds())/float64(b.N), "claim-ms/tick")
				b.ReportMetric(float64(settled.Milliseconds())/float64(b.N), "settle-ms/tick")
			})
		}
	}
}

// claimEachTick claims tick seq of jobs as a leader's batcher does.
func claimEachTick(b *testing.B, cli *clientv3.Client, term election.Fence, jobs []TickJob, seq int64) time.Duration {
	ctx := context.Background()
	var wg sync.WaitGroup
	inFlight := make(chan struct{}, 4)
	for start := 0; start < len(jobs); start += MaxEach {
		lease, err := cli.Grant(ctx, 60)
		if err != nil {
			b.Fatal(err)
		}
		batch := jobs[start:min(len(jobs), start+MaxEach)]
		items := make([]ClaimItem, len(batch))
		for i, j := range batch {
			items[i] = ClaimItem{Key: j.Last, Seq: seq, Held: seq > 1, Opts: []election.ClaimOption{
				election.UnderTerm(term), election.ClaimedBy("me"), UnlessExists(j.Pause, errPausedForTest),
				WithMarker(fmt.Sprintf("%s/running/%d", j.Last, seq), lease.ID)}}
		}
		inFlight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inFlight }()
			if _, errs, err := ClaimEach(ctx, cli, items); err != nil || errs[0] != nil {
				b.Error(err, errs[0])
			}
		})
	}
	wg.Wait()
	return 0
}

// claimTickRecords claims tick seq of jobs by its records, then settles
// them, and returns how long the settle took.
func claimTickRecords(b *testing.B, cli *clientv3.Client, term election.Fence, jobs []TickJob, seq int64) time.Duration {
	ctx := context.Background()
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		b.Fatal(err)
	}
	chunks := TickChunks(jobs)
	recs := make([]TickRecord, len(chunks))
	var wg sync.WaitGroup
	for k, c := range chunks {
		wg.Go(func() {
			var err error
			recs[k], err = ClaimTick(ctx, cli, term, Tick{Record: fmt.Sprintf("/bench/.ticks/%d/%d", seq, k),
				Marker: fmt.Sprintf("/bench/.running/%d/%d", seq, k), Lease: lease.ID, Seq: seq, Holder: "me", Jobs: c})
			if err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	start := time.Now()
	for _, r := range recs {
		wg.Go(func() {
			if err := SettleTick(ctx, cli, r, nil); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// withOutcomes puts an outcome under dir for each of jobs, 100 to a
// transaction.
func withOutcomes(b *testing.B, cli *clientv3.Client, dir string, jobs []TickJob) {
	const outcome = `{"last_success":"2026-01-01T00:00:00.02Z","tick":1767225600000000000}`
	for start := 0; start < len(jobs); start += 100 {
		var puts []clientv3.Op
		for _, j := range jobs[start:min(len(jobs), start+100)] {
			puts = append(puts, clientv3.OpPut(dir+j.Name+"/outcome", outcome))
		}
		if _, err := cli.Txn(context.Background()).Then(puts...).Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
