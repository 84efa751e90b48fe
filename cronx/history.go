package cronx

import (
	"encoding/json"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

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
