package jobkeys

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The values the keys of a Layout hold, but for a job's history (a JSON
// array of cronx.Record) and notrun (internal/notrun): each is read as
// much as it decodes, and a damaged value reads as its doc says.

// encode is v as a key holds it, in JSON.
func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// parse reads a key's JSON value into a T: as much of it as decodes, and
// the error if any of it did not.
func parse[T any](v []byte) (T, error) {
	var t T
	err := json.Unmarshal(v, &t)
	return t, err
}

// Outcome is the value of a job's outcome key: what its history, bounded,
// forgets.
type Outcome struct {
	LastSuccess time.Time `json:"last_success,omitzero"`
	LastFailure time.Time `json:"last_failure,omitzero"`
	// Failures is the number of runs that failed since the last success.
	Failures int `json:"failures,omitempty"`
	// Tick is the latest scheduled tick (Unix nanoseconds) whose run was
	// recorded, however many records came after it.
	Tick int64 `json:"tick,omitempty"`
}

// ParseOutcome reads an outcome value, as much of it as decodes: a damaged
// value is replaced by the next run's write.
func ParseOutcome(v []byte) Outcome {
	o, _ := parse[Outcome](v)
	return o
}

// DecodeOutcome reads an outcome key as a Get returns it; the zero Outcome
// if absent.
func DecodeOutcome(kvs []*mvccpb.KeyValue) Outcome {
	if len(kvs) == 0 {
		return Outcome{}
	}
	return ParseOutcome(kvs[0].Value)
}

// Encode is o as the key holds it.
func (o Outcome) Encode() string {
	return encode(o)
}

// Runs is the value a bounded job's claims put at its runs key, whose
// version counts them: the job's bounds, zero where it has none.
type Runs struct {
	Max   int       `json:"max,omitempty"`
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
}

// ParseRuns reads a runs key's value; a damaged value is an error.
func ParseRuns(v []byte) (Runs, error) { return parse[Runs](v) }

// Encode is r as the key holds it.
func (r Runs) Encode() string {
	return encode(r)
}

// EncodePaused is a pause key's value: who paused the job, then, for a
// job that paused itself, a newline and why. A pause by hand has no
// reason, and its value is who alone.
func EncodePaused(by, reason string) string {
	if reason == "" {
		return by
	}
	return by + "\n" + reason
}

// ParsePaused reads a pause key's value: who paused the job, and why when
// it says.
func ParsePaused(v []byte) (by, reason string) {
	by, reason, _ = strings.Cut(string(v), "\n")
	return by, reason
}

// MaxRecoveredTicks bounds the ticks a recovered key counts: each is a
// tick whose runner died, and only the latest are caught up.
const MaxRecoveredTicks = 8

// Recovered is the value of a job's recovered key: for each of its latest
// ticks run again, how many times, by the tick's Unix nanoseconds.
type Recovered map[string]int

// ParseRecovered reads a recovered key's value, as much of it as decodes;
// never nil.
func ParseRecovered(v []byte) Recovered {
	out, _ := parse[Recovered](v)
	if out == nil {
		out = Recovered{}
	}
	return out
}

// With counts one more recovery of the tick of sequence seq, keeping the
// latest MaxRecoveredTicks ticks: the value to write, and the tick's count
// in it. v is not changed.
func (v Recovered) With(seq int64) (string, int) {
	next := maps.Clone(v)
	if next == nil {
		next = Recovered{}
	}
	key := strconv.FormatInt(seq, 10)
	next[key]++
	if len(next) > MaxRecoveredTicks {
		ticks := slices.SortedFunc(maps.Keys(next), func(a, b string) int {
			x, _ := strconv.ParseInt(a, 10, 64)
			y, _ := strconv.ParseInt(b, 10, 64)
			return cmp.Compare(x, y)
		})
		for _, old := range ticks[:len(ticks)-MaxRecoveredTicks] {
			delete(next, old)
		}
	}
	return encode(next), next[key]
}

// StartedReleases bounds the releases a started key remembers: a replica
// of a release older than the last StartedReleases that comes back runs
// the job again.
const StartedReleases = 16

// A started key's value is the releases that ran the job at start, a JSON
// array, oldest first, at most StartedReleases of them.

// DecodeStarted reads a started key's releases and revision (0 if absent)
// as a Get returns it, as much of them as decodes: a damaged value is
// replaced at the next release.
func DecodeStarted(kvs []*mvccpb.KeyValue) ([]string, int64) {
	if len(kvs) == 0 {
		return nil, 0
	}
	return ParseStarted(kvs[0].Value), kvs[0].ModRevision
}

// ParseStarted reads a started key's value, as much of it as decodes.
func ParseStarted(v []byte) []string {
	ran, _ := parse[[]string](v)
	return ran
}

// EncodeStarted appends release to ran and keeps the last StartedReleases;
// ran is not changed.
func EncodeStarted(ran []string, release string) string {
	ran = append(slices.Clone(ran), release)
	if len(ran) > StartedReleases {
		ran = ran[len(ran)-StartedReleases:]
	}
	return encode(ran)
}

// Trigger is the value of a trigger's request key.
type Trigger struct {
	By string `json:"by"`
	At int64  `json:"at"` // Unix nanoseconds
	// Release is, for a run at start, the release whose replicas alone
	// may run it; empty for any replica.
	Release string `json:"release,omitempty"`
}

// EncodeTrigger is the value of a request of by, made at at, for the
// replicas of release (empty: any replica).
func EncodeTrigger(by string, at time.Time, release string) string {
	return encode(Trigger{By: by, At: at.UnixNano(), Release: release})
}

// ParseTrigger reads a request's value; a damaged value, or an older
// version's (whoever asked, as plain text), is an error.
func ParseTrigger(v []byte) (Trigger, error) { return parse[Trigger](v) }

// Backfill is the value of a backfill's key: the request and its
// progress.
type Backfill struct {
	From  int64 `json:"from"` // Unix nanoseconds
	To    int64 `json:"to"`
	Max   int   `json:"max"`
	Ticks int   `json:"ticks,omitempty"` // 0: not counted yet
	Done  int   `json:"done,omitempty"`
	// Last is the last tick claimed, in Unix nanoseconds; 0 before the first.
	Last     int64  `json:"last,omitempty"`
	Finished bool   `json:"finished,omitempty"`
	Refused  string `json:"refused,omitempty"`
	By       string `json:"by,omitempty"`
	At       int64  `json:"at,omitempty"`
}

// ParseBackfill reads a backfill's value, as much of it as decodes.
func ParseBackfill(v []byte) Backfill {
	b, _ := parse[Backfill](v)
	return b
}

// Encode is b as the key holds it.
func (b Backfill) Encode() string {
	return encode(b)
}

// Roster is the value of the roster's jobs key: the names of the
// publisher's jobs, and who wrote them when.
type Roster struct {
	Jobs []string  `json:"jobs"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
}

// ParseRoster reads the roster's jobs value; a damaged value is an error.
func ParseRoster(v []byte) (Roster, error) { return parse[Roster](v) }

// Encode is r as the key holds it.
func (r Roster) Encode() string {
	return encode(r)
}

// Stopped is the value of the roster's stopped key: the last replica to
// stop, and when.
type Stopped struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// ParseStopped reads the roster's stopped value; a damaged value is an
// error.
func ParseStopped(v []byte) (Stopped, error) { return parse[Stopped](v) }

// Encode is s as the key holds it.
func (s Stopped) Encode() string {
	return encode(s)
}
