package cronx

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/election"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// layout names the etcd keys of one scheduler's jobs, all under
// P/jobs/<scheduler>/:
//
//	<job>/spec           the job's schedule, written by the replica that publishes
//	<job>/since          when the spec was first published, kept while the spec
//	                     stays: "<seq> <instance>", <seq> the publisher's clock in
//	                     zero-padded Unix nanoseconds; a job that never ran has its
//	                     ticks from then on caught up and counted (catchup.go, gap.go)
//	<job>/by/<lease>     a scheduling replica has the job: its identity, bound to
//	                     one of its runners' leases; a job no live replica registers is
//	                     not listed, unless no replica runs (roster.go)
//	<job>/last           the last claimed tick: "<seq> <instance>"
//	<job>/triggered      the last claimed trigger: "<revision> <instance>",
//	                     which a Replace job's runs watch
//	<job>/running/<seq>  a run in progress, bound to its runner's lease;
//	                     <seq> is the tick's zero-padded Unix nanoseconds, or
//	                     t<revision> for a triggered run
//	<job>/buffer/<seq>   a tick of a BufferOne or BufferAll job that waits for
//	                     the run in progress to end (buffer.go): "<seq> <instance>",
//	                     who buffered it; no lease, so it outlives its writer
//	<job>/paused         present while the job is paused; holds who paused it
//	<job>/history        the latest runs, a JSON array of Record
//	<job>/outcome        the job's last success and failure (outcome.go)
//	<job>/runs           a bounded job's count of runs (bounds.go)
//	<job>/notrun         the ticks nobody ran, counted by hour and reason
//	                     over the last day (notrun.go): a JSON notRunValue
//	<job>/recovered      how many times each of the job's latest ticks whose
//	                     runner died was run again (recovery.go)
//	<job>/started        the releases whose start ran the job (WithRunAtStart,
//	                     atstart.go): a JSON array, oldest first
//	.trigger/<job>/<id>  a request to run the job once, one per Trigger
//	                     call: its time and who asked (trigger.go)
//	.backfill/<job>/<id> a request to run every tick of [from, to), named
//	                     after its range, with its progress: a JSON
//	                     backfillValue (backfill.go); its runs' markers are
//	                     <job>/running/b<seq>
//	.roster/sum          a hash of the names of the publisher's jobs (roster.go)
//	.roster/jobs         those names, for Status when no replica runs
//	.roster/stopped      the last replica to stop, and when
//
// The coordinator and Control both name keys through it, so the layout is
// written down once.
type layout struct {
	jobs string // P/jobs/<scheduler>/
}

func newLayout(prefix, scheduler string) layout {
	return layout{jobs: schedulersDir(prefix) + scheduler + "/"}
}

// schedulersDir holds every scheduler's keys: P/jobs/.
func schedulersDir(prefix string) string { return prefix + "/jobs/" }

// triggerDir holds manual triggers. Job names cannot start with '.', so it
// never clashes with a job.
const triggerDir = ".trigger/"

func (l layout) last(job string) string      { return l.jobs + job + "/last" }
func (l layout) triggered(job string) string { return l.jobs + job + "/triggered" }
func (l layout) running(job string) string   { return l.jobs + job + "/running/" }
func (l layout) paused(job string) string    { return l.jobs + job + "/paused" }
func (l layout) history(job string) string   { return l.jobs + job + "/history" }
func (l layout) outcome(job string) string   { return l.jobs + job + "/outcome" }
func (l layout) spec(job string) string      { return l.jobs + job + "/spec" }
func (l layout) since(job string) string     { return l.jobs + job + "/since" }
func (l layout) notRun(job string) string    { return l.jobs + job + "/notrun" }
func (l layout) recovered(job string) string { return l.jobs + job + "/recovered" }
func (l layout) runs(job string) string      { return l.jobs + job + "/runs" }
func (l layout) byDir(job string) string     { return l.jobs + job + "/by/" }
func (l layout) buffer(job string) string    { return l.jobs + job + "/buffer/" }

// bufferEntry is the buffer key of job's tick of sequence seq, zero-padded
// so that etcd lists a buffer in tick order.
func (l layout) bufferEntry(job string, seq int64) string {
	return l.buffer(job) + fmt.Sprintf("%020d", seq)
}

// bufferSeq reads the tick's sequence from a buffer key.
func (l layout) bufferSeq(key string) (int64, bool) {
	_, leaf, ok := l.jobKey(key)
	num, ok2 := strings.CutPrefix(leaf, "buffer/")
	if !ok || !ok2 {
		return 0, false
	}
	seq, err := strconv.ParseInt(num, 10, 64)
	return seq, err == nil
}

func (l layout) started(job string) string { return l.jobs + job + "/started" }

// by is the registration of job by the replica of lease.
func (l layout) by(job string, lease clientv3.LeaseID) string {
	return l.byDir(job) + strconv.FormatInt(int64(lease), 16)
}

// tickRecords holds the records of ticks claimed for many jobs at once
// (tickrecord.go), by tick: .ticks/<seq>/<id>; each record's marker is
// .tickruns/<seq>/<id>. Job names cannot start with '.'.
func (l layout) tickRecords() string { return l.jobs + ".ticks/" }

func (l layout) tickRecord(seq int64, id string) string {
	return fmt.Sprintf("%s%020d/%s", l.tickRecords(), seq, id)
}

func (l layout) tickRuns(seq int64, id string) string {
	return l.tickRunsOfTick(seq) + id
}

// tickRunsOfTick holds the markers of the records of the tick with
// sequence seq.
func (l layout) tickRunsOfTick(seq int64) string {
	return fmt.Sprintf("%s.tickruns/%020d/", l.jobs, seq)
}

// tickRunsOf is the marker of the record at key record.
func (l layout) tickRunsOf(record string) string {
	return l.jobs + ".tickruns/" + strings.TrimPrefix(record, l.tickRecords())
}

// tickMarker is the in-progress marker of a run of the tick with sequence seq.
func (l layout) tickMarker(job string, seq int64) string {
	return l.running(job) + fmt.Sprintf("%020d", seq)
}

// triggerMarker is the in-progress marker of the run of the trigger written
// at revision rev.
func (l layout) triggerMarker(job string, rev int64) string {
	return l.running(job) + fmt.Sprintf("t%d", rev)
}

// backfillDir holds backfill requests, as triggerDir holds triggers.
const backfillDir = ".backfill/"

// backfills is the directory of backfill requests; backfillsOf holds job's,
// backfill is the request of job named id, backfillJob the job a request's
// key is of.
func (l layout) backfills() string              { return l.jobs + backfillDir }
func (l layout) backfillsOf(job string) string  { return l.jobs + backfillDir + job + "/" }
func (l layout) backfill(job, id string) string { return l.backfillsOf(job) + id }
func (l layout) backfillJob(key string) string {
	job, _, _ := strings.Cut(strings.TrimPrefix(key, l.jobs+backfillDir), "/")
	return job
}

// backfillMarker is the in-progress marker of a backfill's run of the tick
// with sequence seq: apart from the marker of the same tick's scheduled run.
func (l layout) backfillMarker(job string, seq int64) string {
	return l.backfillMarkers(job) + fmt.Sprintf("%020d", seq)
}

// backfillMarkers is the prefix of every backfill marker of job.
func (l layout) backfillMarkers(job string) string { return l.running(job) + "b" }

// rosterDir holds the scheduler's roster (roster.go); like triggerDir it
// never clashes with a job.
const rosterDir = ".roster/"

func (l layout) roster() string        { return l.jobs + rosterDir }
func (l layout) rosterSum() string     { return l.jobs + rosterDir + "sum" }
func (l layout) rosterJobs() string    { return l.jobs + rosterDir + "jobs" }
func (l layout) rosterStopped() string { return l.jobs + rosterDir + "stopped" }

// triggers is the directory of manual triggers; trigger is one request of
// job, named id; triggerJob the job a request's key is of.
func (l layout) triggers() string              { return l.jobs + triggerDir }
func (l layout) trigger(job, id string) string { return l.jobs + triggerDir + job + "/" + id }
func (l layout) triggerJob(key string) string {
	return splitTrigger(strings.TrimPrefix(key, l.jobs+triggerDir))
}

// jobKey splits a key under the scheduler into its job and the rest of the
// key (spec, last, running/<seq>, ...); ok is false for keys of no job: the
// scheduler's own, and strays (strays.go), whose job's name is not valid.
func (l layout) jobKey(key string) (job, leaf string, ok bool) {
	rest, under := strings.CutPrefix(key, l.jobs)
	if !under {
		return "", "", false
	}
	job, leaf, ok = strings.Cut(rest, "/")
	if !ok || strings.HasPrefix(job, ".") || election.CheckName("job", job) != nil {
		return "", "", false
	}
	return job, leaf, true
}

// parseLast reads a claim value: a zero-padded decimal sequence (the tick's
// Unix nanoseconds) and who claimed it. The padding must not be taken for an
// octal prefix, as fmt.Sscan would.
func parseLast(v string) (int64, string, error) {
	num, by, _ := strings.Cut(v, " ")
	seq, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, "", err
	}
	return seq, by, nil
}

// markerHolder reads who runs a run from its in-progress marker's value.
func markerHolder(v string) string {
	_, by, _ := strings.Cut(v, " ")
	return by
}

// historyLen bounds each job's run history.
const historyLen = 10

// Record is one run in a job's history.
type Record struct {
	Tick      time.Time     `json:"tick"`
	Instance  string        `json:"instance"`
	Start     time.Time     `json:"start"`
	Duration  time.Duration `json:"duration"`
	Error     string        `json:"error,omitempty"`
	Triggered bool          `json:"triggered,omitempty"`
	// Backfill is true for a run of a backfill (Cron.Backfill), whose Tick
	// is the tick of the schedule it ran for.
	Backfill bool `json:"backfill,omitempty"`
	// TimedOut is true for a run that reached its timeout (WithTimeout);
	// Error then says so too.
	TimedOut bool `json:"timed_out,omitempty"`
	// Attempt is the attempt's number, from 1, for a job with retries
	// (WithRetries): each attempt is a record of its own.
	Attempt int `json:"attempt,omitempty"`
	// CaughtUp is true for the run of a tick missed while nobody ran the
	// job, run late within its catch-up window (WithCatchUp).
	CaughtUp bool `json:"caught_up,omitempty"`
	// Recovered is, for a run again of a tick whose runner died
	// (WithRecovery), the how-manieth; 0 for a tick's first run.
	Recovered int `json:"recovered,omitempty"`
}

// decodeHistory reads a history key's records and revision (0 if absent).
func decodeHistory(kvs []*mvccpb.KeyValue) ([]Record, int64) {
	if len(kvs) == 0 {
		return nil, 0
	}
	return parseHistory(kvs[0].Value), kvs[0].ModRevision
}

// parseHistory reads a history value, as much of it as decodes: a damaged
// value is replaced by the next run's write.
func parseHistory(v []byte) []Record {
	var hist []Record
	json.Unmarshal(v, &hist)
	return hist
}

// encodeHistory appends rec to hist, keeps the last historyLen records,
// and encodes them.
func encodeHistory(hist []Record, rec Record) string {
	hist = append(hist, rec)
	if len(hist) > historyLen {
		hist = hist[len(hist)-historyLen:]
	}
	b, _ := json.Marshal(hist)
	return string(b)
}

// notRunWindow is how far back JobStatus.NotRun counts, to the hour.
const notRunWindow = 24 * time.Hour

// notRunValue is a job's ticks that nobody ran, counted by the hour they
// fell in and their reason. Upto is the latest tick counted: a tick at or
// before it is not counted again, so replicas that report the same tick
// count it once.
type notRunValue struct {
	Upto  int64        `json:"upto"`
	Hours []notRunHour `json:"hours,omitempty"`
}

// notRunHour counts the ticks of one hour, starting at Hour (Unix seconds),
// by the name of their Reason.
type notRunHour struct {
	Hour   int64          `json:"hour"`
	Counts map[string]int `json:"counts"`
}

// parseNotRun reads a notrun value, as much of it as decodes: a damaged
// value is replaced by the next write.
func parseNotRun(v []byte) notRunValue {
	var n notRunValue
	json.Unmarshal(v, &n)
	return n
}

func encodeNotRun(n notRunValue) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// add counts n ticks of reason in the hour of tick.
func (v *notRunValue) add(hour int64, reason Reason, n int) {
	for i := range v.Hours {
		if v.Hours[i].Hour == hour {
			v.Hours[i].Counts[reason.String()] += n
			return
		}
	}
	v.Hours = append(v.Hours, notRunHour{Hour: hour, Counts: map[string]int{reason.String(): n}})
}

// prune drops the hours that ended before the window that ends at now.
func (v *notRunValue) prune(now time.Time) {
	from := now.Add(-notRunWindow).Truncate(time.Hour).Unix()
	kept := v.Hours[:0]
	for _, h := range v.Hours {
		if h.Hour >= from {
			kept = append(kept, h)
		}
	}
	v.Hours = kept
}

// counts sums the hours of the window that ends at now, by reason; nil when
// there is none.
func (v notRunValue) counts(now time.Time) map[Reason]int {
	from := now.Add(-notRunWindow).Truncate(time.Hour).Unix()
	var out map[Reason]int
	for _, h := range v.Hours {
		if h.Hour < from {
			continue
		}
		for name, n := range h.Counts {
			r := parseReason(name)
			if r == 0 || n <= 0 {
				continue
			}
			if out == nil {
				out = map[Reason]int{}
			}
			out[r] += n
		}
	}
	return out
}

// parseReason is the Reason named name, 0 for none.
func parseReason(name string) Reason {
	for _, r := range Reasons() {
		if r.String() == name {
			return r
		}
	}
	return 0
}
