// Package jobkeys names the etcd keys of a coordinated scheduler's jobs:
// where cronx and its Control read and write, written down once; and it
// encodes and reads the values they hold (values.go).
package jobkeys

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Layout names the etcd keys of one scheduler's jobs, all under
// P/jobs/<scheduler>/:
//
//	<job>/spec           the job's schedule, written by the replica that publishes
//	<job>/since          when the spec was first published, kept while the spec
//	                     stays: "<seq> <instance>", <seq> the publisher's clock in
//	                     zero-padded Unix nanoseconds; a job that never ran has its
//	                     ticks from then on caught up and counted (cronx/catchup.go, cronx/gap.go)
//	<job>/by/<lease>     a scheduling replica has the job: its identity, bound to
//	                     one of its runners' leases; a job no live replica registers is
//	                     not listed, unless no replica runs (cronx/roster.go)
//	<job>/last           the last claimed tick: "<seq> <instance>"
//	<job>/triggered      the last claimed trigger: "<revision> <instance>",
//	                     which a Replace job's runs watch
//	<job>/running/<seq>  a run in progress, bound to its runner's lease;
//	                     <seq> is the tick's zero-padded Unix nanoseconds, or
//	                     t<revision> for a triggered run
//	<job>/buffer/<seq>   a tick of a BufferOne or BufferAll job that waits for
//	                     the run in progress to end (cronx/buffer.go): "<seq> <instance>",
//	                     who buffered it; no lease, so it outlives its writer
//	<job>/paused         present while the job is paused; holds who paused it
//	<job>/history        the latest runs, a JSON array of Record
//	<job>/outcome        the job's last success and failure (cronx/outcome.go)
//	<job>/runs           a bounded job's count of runs (cronx/bounds.go)
//	<job>/notrun         the ticks nobody ran, counted by hour and reason
//	                     over the last day (cronx/notrun.go): a JSON notrun.Value (internal/notrun)
//	<job>/recovered      how many times each of the job's latest ticks whose
//	                     runner died was run again (cronx/recovery.go)
//	<job>/started        the releases whose start ran the job (WithRunAtStart,
//	                     cronx/atstart.go): a JSON array, oldest first
//	.trigger/<job>/<id>  a request to run the job once, one per Trigger
//	                     call: its time and who asked (cronx/trigger.go)
//	.backfill/<job>/<id> a request to run every tick of [from, to), named
//	                     after its range, with its progress: a JSON
//	                     Backfill (cronx/backfill.go); its runs' markers are
//	                     <job>/running/b<seq>
//	.roster/sum          a hash of the names of the publisher's jobs (cronx/roster.go)
//	.roster/jobs         those names, for Status when no replica runs
//	.roster/stopped      the last replica to stop, and when
//
// The coordinator and Control both name keys through it, so the Layout is
// written down once.
type Layout struct {
	dir string // P/jobs/<scheduler>/
}

// New is the layout of the scheduler named scheduler under prefix.
func New(prefix, scheduler string) Layout {
	return Layout{dir: SchedulersDir(prefix) + scheduler + "/"}
}

// SchedulersDir holds every scheduler's keys: P/jobs/.
func SchedulersDir(prefix string) string { return prefix + "/jobs/" }

// triggerDir holds manual triggers. Job names cannot start with '.', so it
// never clashes with a job.
const triggerDir = ".trigger/"

func (l Layout) Last(job string) string      { return l.dir + job + "/last" }
func (l Layout) Triggered(job string) string { return l.dir + job + "/triggered" }
func (l Layout) Running(job string) string   { return l.dir + job + "/running/" }
func (l Layout) Paused(job string) string    { return l.dir + job + "/paused" }
func (l Layout) History(job string) string   { return l.dir + job + "/history" }
func (l Layout) Outcome(job string) string   { return l.dir + job + "/outcome" }
func (l Layout) Spec(job string) string      { return l.dir + job + "/spec" }
func (l Layout) Since(job string) string     { return l.dir + job + "/since" }
func (l Layout) NotRun(job string) string    { return l.dir + job + "/notrun" }
func (l Layout) Recovered(job string) string { return l.dir + job + "/recovered" }
func (l Layout) Runs(job string) string      { return l.dir + job + "/runs" }
func (l Layout) ByDir(job string) string     { return l.dir + job + "/by/" }
func (l Layout) Buffer(job string) string    { return l.dir + job + "/buffer/" }

// bufferEntry is the buffer key of job's tick of sequence seq, zero-padded
// so that etcd lists a buffer in tick order.
func (l Layout) BufferEntry(job string, seq int64) string {
	return l.Buffer(job) + fmt.Sprintf("%020d", seq)
}

// bufferSeq reads the tick's sequence from a buffer key.
func (l Layout) BufferSeq(key string) (int64, bool) {
	_, leaf, ok := l.JobKey(key)
	num, ok2 := strings.CutPrefix(leaf, "buffer/")
	if !ok || !ok2 {
		return 0, false
	}
	seq, err := strconv.ParseInt(num, 10, 64)
	return seq, err == nil
}

func (l Layout) Started(job string) string { return l.dir + job + "/started" }

// by is the registration of job by the replica of lease.
func (l Layout) By(job string, lease clientv3.LeaseID) string {
	return l.ByDir(job) + strconv.FormatInt(int64(lease), 16)
}

// tickRecords holds the records of ticks claimed for many jobs at once
// (cronx/tickrecord.go), by tick: .ticks/<seq>/<id>; each record's marker is
// .tickruns/<seq>/<id>. Job names cannot start with '.'.
func (l Layout) TickRecords() string { return l.dir + ".ticks/" }

func (l Layout) TickRecord(seq int64, id string) string {
	return fmt.Sprintf("%s%020d/%s", l.TickRecords(), seq, id)
}

func (l Layout) TickRuns(seq int64, id string) string {
	return l.TickRunsOfTick(seq) + id
}

// tickRunsOfTick holds the markers of the records of the tick with
// sequence seq.
func (l Layout) TickRunsOfTick(seq int64) string {
	return fmt.Sprintf("%s.tickruns/%020d/", l.dir, seq)
}

// tickRunsOf is the marker of the record at key record.
func (l Layout) TickRunsOf(record string) string {
	return l.dir + ".tickruns/" + strings.TrimPrefix(record, l.TickRecords())
}

// tickMarker is the in-progress marker of a run of the tick with sequence seq.
func (l Layout) TickMarker(job string, seq int64) string {
	return l.Running(job) + fmt.Sprintf("%020d", seq)
}

// triggerMarker is the in-progress marker of the run of the trigger written
// at revision rev.
func (l Layout) TriggerMarker(job string, rev int64) string {
	return l.Running(job) + fmt.Sprintf("t%d", rev)
}

// backfillDir holds backfill requests, as triggerDir holds triggers.
const backfillDir = ".backfill/"

// backfills is the directory of backfill requests; backfillsOf holds job's,
// backfill is the request of job named id, backfillJob the job a request's
// key is of.
func (l Layout) Backfills() string              { return l.dir + backfillDir }
func (l Layout) BackfillsOf(job string) string  { return l.dir + backfillDir + job + "/" }
func (l Layout) Backfill(job, id string) string { return l.BackfillsOf(job) + id }
func (l Layout) BackfillJob(key string) string {
	job, _, _ := strings.Cut(strings.TrimPrefix(key, l.dir+backfillDir), "/")
	return job
}

// backfillMarker is the in-progress marker of a backfill's run of the tick
// with sequence seq: apart from the marker of the same tick's scheduled run.
func (l Layout) BackfillMarker(job string, seq int64) string {
	return l.BackfillMarkers(job) + fmt.Sprintf("%020d", seq)
}

// backfillMarkers is the prefix of every backfill marker of job.
func (l Layout) BackfillMarkers(job string) string { return l.Running(job) + "b" }

// rosterDir holds the scheduler's roster (cronx/roster.go); like triggerDir it
// never clashes with a job.
const rosterDir = ".roster/"

func (l Layout) Roster() string        { return l.dir + rosterDir }
func (l Layout) RosterSum() string     { return l.dir + rosterDir + "sum" }
func (l Layout) RosterJobs() string    { return l.dir + rosterDir + "jobs" }
func (l Layout) RosterStopped() string { return l.dir + rosterDir + "stopped" }

// triggers is the directory of manual triggers; trigger is one request of
// job, named id; TriggerJob the job a request's key is of: <job>/<id>, or
// <job> alone for an older version's.
func (l Layout) Triggers() string              { return l.dir + triggerDir }
func (l Layout) Trigger(job, id string) string { return l.dir + triggerDir + job + "/" + id }
func (l Layout) TriggerJob(key string) string {
	job, _, _ := strings.Cut(strings.TrimPrefix(key, l.dir+triggerDir), "/")
	return job
}

// jobKey splits a key under the scheduler into its job and the rest of the
// key (spec, last, running/<seq>, ...); ok is false for keys of no job: the
// scheduler's own, and strays (cronx/strays.go), whose job's name is not valid.
func (l Layout) JobKey(key string) (job, leaf string, ok bool) {
	rest, under := strings.CutPrefix(key, l.dir)
	if !under {
		return "", "", false
	}
	job, leaf, ok = strings.Cut(rest, "/")
	if !ok || strings.HasPrefix(job, ".") || election.CheckName("job", job) != nil {
		return "", "", false
	}
	return job, leaf, true
}

// ParseLast reads a claim value: a zero-padded decimal sequence (the tick's
// Unix nanoseconds) and who claimed it. The padding must not be taken for an
// octal prefix, as fmt.Sscan would.
func ParseLast(v string) (int64, string, error) {
	num, by, _ := strings.Cut(v, " ")
	seq, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, "", err
	}
	return seq, by, nil
}

// MarkerHolder reads who runs a run from its in-progress marker's value.
func MarkerHolder(v string) string {
	_, by, _ := strings.Cut(v, " ")
	return by
}

// Stray says why key, under the scheduler's directory and of no job, is
// no key of the scheduler: it is in no job's directory, or its job's name,
// whose directory is dir, is not valid. why is "" for the scheduler's own
// keys (.trigger/<job>).
func (l Layout) Stray(key string) (dir, why string) {
	job, _, ok := strings.Cut(strings.TrimPrefix(key, l.dir), "/")
	switch {
	case strings.HasPrefix(job, "."):
		return "", ""
	case !ok:
		return "", "in no job's directory"
	}
	if err := election.CheckName("job", job); err != nil {
		return l.dir + job + "/", err.Error()
	}
	return "", ""
}

// Dir is the directory of every key of the scheduler: P/jobs/<scheduler>/.
func (l Layout) Dir() string { return l.dir }
