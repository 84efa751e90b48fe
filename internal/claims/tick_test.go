package claims

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// markerLeaseTTL is the TTL, in seconds, of the lease that binds a test's
// tick markers: no test here waits for it to lapse, and a loaded machine
// has taken over 10 s to claim and settle 5000 jobs.
const markerLeaseTTL = 60

// tickJobs are n jobs under dir, named j0…, with their claim and pause keys.
func tickJobs(dir string, n int) []TickJob {
	jobs := make([]TickJob, n)
	for i := range jobs {
		name := fmt.Sprintf("j%d", i)
		jobs[i] = TickJob{Name: name, Last: dir + name + "/last", Pause: dir + name + "/paused"}
	}
	return jobs
}

// keysUnder derives a record's keys as tickJobs and the tests lay them out
// under dir.
func keysUnder(dir string) TickKeys {
	return TickKeys{
		Marker: func(record string) string { return dir + ".running/" + strings.TrimPrefix(record, dir+".ticks/") },
		Job: func(name string) TickJob {
			return TickJob{Name: name, Last: dir + name + "/last", Pause: dir + name + "/paused"}
		},
	}
}

// leaderTerm puts a leader key under dir and returns its fence.
func leaderTerm(t *testing.T, cli *clientv3.Client, dir string) election.Fence {
	t.Helper()
	resp, err := cli.Put(deadlineCtx(t, 5*time.Second), dir+"leader", "me")
	if err != nil {
		t.Fatal(err)
	}
	return election.Fence{Key: dir + "leader", Revision: resp.Header.Revision}
}

// TestATicksRecordRunsEachJobOnce: one claim of a tick for five jobs
// commits with its record and its marker, tells the job paused before it
// apart (and a job's keys that lie between its claim key and its pause
// from either), and refuses a second claim of the tick; settled with one
// run given back, it moves the claim keys of the jobs that ran, and only
// theirs, so that a claim of the tick by a job's key alone (a successor's
// catch-up) is refused for those and commits for the one given back.
func TestATicksRecordRunsEachJobOnce(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	const dir = "/tick/s/"
	const seq = 100
	jobs := tickJobs(dir, 5)
	keys := map[string]string{
		jobs[1].Last:  claimcond.Value(seq-10, "before"), // an earlier tick claimed
		jobs[2].Last:  claimcond.Value(seq+10, "later"),  // a later one
		jobs[3].Pause: "paused",
		// Keys between a job's claim key and its pause, read with them
		// and told apart: one that holds a later claim, and a job's
		// outcome and notrun.
		jobs[0].Last + "x": claimcond.Value(seq+10, "not its claim key"),
	}
	for _, j := range jobs {
		keys[dir+j.Name+"/notrun"], keys[dir+j.Name+"/outcome"] = `{"upto":1}`, `{"tick":1}`
	}
	for k, v := range keys {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	term := leaderTerm(t, cli, dir)
	sess, err := election.NewSession(ctx, cli, election.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	tick := Tick{Record: dir + ".ticks/100/0", Marker: dir + ".running/100/0", Lease: sess.Lease(), Seq: seq, Holder: "me", Jobs: jobs}
	rec, err := ClaimTick(ctx, cli, term, tick)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, nil, election.ErrClaimed, ErrTickPaused, nil} {
		if !errors.Is(rec.Skipped[i], want) || want == nil && rec.Skipped[i] != nil {
			t.Fatalf("%s skipped: %v, want %v", jobs[i].Name, rec.Skipped[i], want)
		}
	}
	marker, err := cli.Get(ctx, tick.Marker)
	if err != nil {
		t.Fatal(err)
	}
	if len(marker.Kvs) != 1 || clientv3.LeaseID(marker.Kvs[0].Lease) != sess.Lease() || marker.Kvs[0].CreateRevision != rec.Revision {
		t.Fatalf("marker %v, want one created at the claim's revision %d on lease %x", marker.Kvs, rec.Revision, sess.Lease())
	}
	if c := rec.Claim(); c.Fence.Key != tick.Marker || c.Fence.Revision != rec.Revision || c.Seq != seq {
		t.Fatalf("claim %+v, want the marker's fence at %d", c, rec.Revision)
	}
	if _, err := ClaimTick(ctx, cli, term, tick); !errors.Is(err, ErrTickClaimed) {
		t.Fatalf("a second claim of the tick: %v, want %v", err, ErrTickClaimed)
	}

	if err := SettleTick(ctx, cli, rec, func(i int) bool { return i != 4 }); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		jobs[0].Last: claimcond.Value(seq, "me"),
		jobs[1].Last: claimcond.Value(seq, "me"),
		jobs[2].Last: claimcond.Value(seq+10, "later"),
		jobs[3].Last: "",
		jobs[4].Last: "",
		tick.Record:  "",
	}
	for k, v := range want {
		if got := valueOf(t, cli, k); got != v {
			t.Errorf("%s = %q after the settle, want %q", k, got, v)
		}
	}
	items := make([]ClaimItem, len(jobs))
	for i, j := range jobs {
		items[i] = ClaimItem{Key: j.Last, Seq: seq, Opts: []election.ClaimOption{election.ClaimedBy("successor"), UnlessExists(j.Pause, errPausedForTest)}}
	}
	_, errs, err := ClaimEach(ctx, cli, items)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{election.ErrClaimed, election.ErrClaimed, election.ErrClaimed, errPausedForTest, nil} {
		if !errors.Is(errs[i], want) || want == nil && errs[i] != nil {
			t.Errorf("%s claimed again by its key: %v, want %v", jobs[i].Name, errs[i], want)
		}
	}
	if err := SettleTick(ctx, cli, rec, nil); err != nil {
		t.Fatalf("a record settled already, settled again: %v", err)
	}
	if seq, holder := lastClaim(t, cli, jobs[4].Last); seq != 100 || holder != "successor" {
		t.Fatalf("the given-back job's key holds %d by %s after a second settle; want the successor's claim", seq, holder)
	}
}

// TestATickThatComesRoundAgainRunsNoJobTwice: a tick claimed again while
// its record waits to be settled and its marker is gone (its runs ended,
// or its claimer's lease lapsed) is refused; claimed again once settled (a
// leader whose clock was stepped back), every job that ran is told
// claimed, and nothing runs.
func TestATickThatComesRoundAgainRunsNoJobTwice(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	const dir = "/again/"
	term := leaderTerm(t, cli, dir)
	lease, err := cli.Grant(ctx, markerLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	tick := Tick{Record: dir + ".ticks/3/0", Marker: dir + ".running/3/0", Lease: lease.ID, Seq: 3, Holder: "me", Jobs: tickJobs(dir, 3)}
	rec, err := ClaimTick(ctx, cli, term, tick)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, tick.Marker); err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimTick(ctx, cli, term, tick); !errors.Is(err, ErrTickClaimed) {
		t.Fatalf("claimed again before its settle: %v, want %v", err, ErrTickClaimed)
	}
	if err := SettleTick(ctx, cli, rec, nil); err != nil {
		t.Fatal(err)
	}
	again, err := ClaimTick(ctx, cli, term, tick)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again.Jobs {
		if again.Runs(i) || !errors.Is(again.Skipped[i], election.ErrClaimed) {
			t.Errorf("%s again: %v, want claimed already", again.Jobs[i].Name, again.Skipped[i])
		}
	}
}

// TestATicksRecordUnderAnEndedTermIsRefused: a deposed leader's claim of
// a tick commits nothing.
func TestATicksRecordUnderAnEndedTermIsRefused(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	const dir = "/deposed/"
	term := leaderTerm(t, cli, dir)
	if _, err := cli.Delete(ctx, term.Key); err != nil {
		t.Fatal(err)
	}
	lease, err := cli.Grant(ctx, markerLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	tick := Tick{Record: dir + ".ticks/7", Marker: dir + ".running/7", Lease: lease.ID, Seq: 7, Holder: "me", Jobs: tickJobs(dir, 3)}
	if _, err := ClaimTick(ctx, cli, term, tick); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("claim under an ended term: %v, want %v", err, election.ErrNotLeader)
	}
	noKeysUnder(t, cli, dir+".")
}

// noKeysUnder fails the test if any key starts with prefix: what refused
// claims would have written.
func noKeysUnder(t *testing.T, cli *clientv3.Client, prefix string) {
	t.Helper()
	resp, err := cli.Get(deadlineCtx(t, 5*time.Second), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Fatalf("%d keys under %s written by refused claims", resp.Count, prefix)
	}
}

// valueOf is key's value, "" if it is absent.
func valueOf(t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()
	resp, err := cli.Get(deadlineCtx(t, 5*time.Second), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// TestASuccessorSettlesARecordItsClaimerLeft: a record its claimer did not
// settle is found with its jobs' pauses as they were at the claim, and
// settled by whoever found it: a job paused before the claim keeps its
// claim key, and so does one whose tick was claimed already, while one
// paused after the claim has it moved like the others.
func TestASuccessorSettlesARecordItsClaimerLeft(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	const dir = "/left/"
	jobs := tickJobs(dir, 4)
	if _, err := cli.Put(ctx, jobs[1].Pause, "before"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, jobs[3].Last, claimcond.Value(9, "other")); err != nil {
		t.Fatal(err)
	}
	lease, err := cli.Grant(ctx, markerLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	tick := Tick{Record: dir + ".ticks/9/0", Marker: dir + ".running/9/0", Lease: lease.ID, Seq: 9, Holder: "lost", Jobs: jobs}
	if _, err := ClaimTick(ctx, cli, leaderTerm(t, cli, dir), tick); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, jobs[2].Pause, "after"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, dir+".ticks/not-a-record", "{"); err != nil {
		t.Fatal(err)
	}
	recs, err := PendingTicks(ctx, cli, dir+".ticks/", keysUnder(dir))
	if err == nil || !strings.Contains(err.Error(), "not-a-record") {
		t.Errorf("a key that holds no record: %v, want an error naming it", err)
	}
	if len(recs) != 1 || recs[0].Record != tick.Record || recs[0].Marker != tick.Marker || recs[0].Holder != "lost" || len(recs[0].Jobs) != len(jobs) {
		t.Fatalf("pending %+v, want the record of %s", recs, tick.Record)
	}
	for i, want := range []error{nil, ErrTickPaused, nil, election.ErrClaimed} {
		if !errors.Is(recs[0].Skipped[i], want) || want == nil && recs[0].Skipped[i] != nil {
			t.Fatalf("%s skipped at the claim: %v, want %v", jobs[i].Name, recs[0].Skipped[i], want)
		}
	}
	if err := SettleTick(ctx, cli, recs[0], nil); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{claimcond.Value(9, "lost"), "", claimcond.Value(9, "lost"), claimcond.Value(9, "other")} {
		if got := valueOf(t, cli, jobs[i].Last); got != want {
			t.Errorf("%s: claim key %q after the settle, want %q", jobs[i].Name, got, want)
		}
	}
	if _, err := cli.Delete(ctx, dir+".ticks/not-a-record"); err != nil {
		t.Fatal(err)
	}
	if recs, err := PendingTicks(ctx, cli, dir+".ticks/", keysUnder(dir)); err != nil || len(recs) != 0 {
		t.Fatalf("pending after the settle: %+v, %v; want none", recs, err)
	}
}

// TestATicksClaimNamesWhatIsWrong: a claim etcd could not take, or that
// would list a job twice, is an error naming it, and nothing is written.
func TestATicksClaimNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	term := leaderTerm(t, cli, "/wrong/")
	ok := Tick{Record: "/wrong/.ticks/1", Marker: "/wrong/.running/1", Seq: 1, Holder: "me", Jobs: tickJobs("/wrong/", 2)}
	for _, c := range []struct {
		name   string
		edit   func(*Tick)
		naming string
	}{
		{"no record", func(t *Tick) { t.Record = "" }, "want a record"},
		{"no marker", func(t *Tick) { t.Marker = "" }, "want a record, a marker"},
		{"no jobs", func(t *Tick) { t.Jobs = nil }, "lists 0 jobs"},
		{"too many jobs", func(t *Tick) { t.Jobs = tickJobs("/wrong/", MaxTickJobs+1) }, fmt.Sprintf("lists %d jobs", MaxTickJobs+1)},
		{"a job twice", func(t *Tick) { t.Jobs = append(t.Jobs, t.Jobs[0]) }, `"/wrong/j0/last" listed twice`},
		{"no pause key", func(t *Tick) { t.Jobs = []TickJob{{Name: "x", Last: "/wrong/x/last"}} }, `job "x" needs`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tick := ok
			c.edit(&tick)
			if _, err := ClaimTick(ctx, cli, term, tick); err == nil || !strings.Contains(err.Error(), c.naming) {
				t.Fatalf("ClaimTick: %v, want an error with %q", err, c.naming)
			}
		})
	}
	noKeysUnder(t, cli, "/wrong/.")
}

// TestFullTicksRecordsAreWithinEtcdsLimits: 5000 jobs, half of them with
// long keys, split by TickChunks into chunks of MaxTickJobs and chunks cut
// by size, are claimed and settled by an etcd at its default
// --max-txn-ops and --max-request-bytes, a record of each chunk, every job
// once.
func TestFullTicksRecordsAreWithinEtcdsLimits(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	ctx := deadlineCtx(t, 60*time.Second)
	const dir = "/full/"
	jobs := make([]TickJob, 5000)
	for i := range jobs {
		name := fmt.Sprintf("j%05d", i)
		if i >= len(jobs)/2 {
			name = fmt.Sprintf("%s-%05d", strings.Repeat("tenant", 20), i)
		}
		jobs[i] = TickJob{Name: name, Last: dir + name + "/last", Pause: dir + name + "/paused"}
	}
	chunks := TickChunks(jobs)
	var n, full int
	for _, c := range chunks {
		if len(c) > MaxTickJobs {
			t.Fatalf("a chunk of %d jobs", len(c))
		}
		if len(c) == MaxTickJobs {
			full++
		}
		for _, j := range c {
			if j != jobs[n] {
				t.Fatalf("job %d of the chunks is %s, want %s", n, j.Name, jobs[n].Name)
			}
			n++
		}
	}
	if n != len(jobs) || full < 2 || len(chunks) < full+3 {
		t.Fatalf("%d jobs in %d chunks, %d of them full; want all %d, in full chunks and chunks cut by size", n, len(chunks), full, len(jobs))
	}
	term := leaderTerm(t, cli, dir)
	lease, err := cli.Grant(ctx, markerLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	for k, c := range chunks {
		tick := Tick{Record: fmt.Sprintf("%s.ticks/5/%d", dir, k), Marker: fmt.Sprintf("%s.running/5/%d", dir, k), Lease: lease.ID, Seq: 5, Holder: "me", Jobs: c}
		rec, err := ClaimTick(ctx, cli, term, tick)
		if err != nil {
			t.Fatalf("chunk %d of %d jobs: %v", k, len(c), err)
		}
		if err := SettleTick(ctx, cli, rec, nil); err != nil {
			t.Fatalf("chunk %d of %d jobs: %v", k, len(c), err)
		}
	}
	resp, err := cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), "/last") {
			moved++
		}
	}
	if moved != len(jobs) {
		t.Fatalf("%d claim keys moved, want %d", moved, len(jobs))
	}
}
