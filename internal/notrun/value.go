// Package notrun is the value of a job's notrun key: its ticks that nobody
// ran, counted by the hour they fell in and by reason over the last day.
// cronx writes it (cronx/notrun.go) and reads it for JobStatus; reasons
// are named here by the strings cronx gives them.
package notrun

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// Window is how far back the counts go, to the hour.
const Window = 24 * time.Hour

// Value is a job's counts. Upto is the latest tick counted: a tick at or
// before it is not counted again, so replicas that report the same tick
// count it once.
type Value struct {
	Upto  int64  `json:"upto"`
	Hours []Hour `json:"hours,omitempty"`
}

// Hour counts the ticks of one hour, starting at Hour (Unix seconds), by
// the name of their reason.
type Hour struct {
	Hour   int64          `json:"hour"`
	Counts map[string]int `json:"counts"`
}

// Parse reads a value, as much of it as decodes: a damaged value is
// replaced by the next write.
func Parse(v []byte) Value {
	var n Value
	json.Unmarshal(v, &n)
	return n
}

// Encode is v as the key holds it.
func (v Value) Encode() string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Add counts n ticks of reason in the hour starting at hour.
func (v *Value) Add(hour int64, reason string, n int) {
	for i := range v.Hours {
		if v.Hours[i].Hour == hour {
			v.Hours[i].Counts[reason] += n
			return
		}
	}
	v.Hours = append(v.Hours, Hour{Hour: hour, Counts: map[string]int{reason: n}})
}

// Prune drops the hours that ended before the window that ends at now.
func (v *Value) Prune(now time.Time) {
	from := windowStart(now)
	v.Hours = slices.DeleteFunc(v.Hours, func(h Hour) bool { return h.Hour < from })
}

// Within is v's hours in the window that ends at now, oldest first.
func (v Value) Within(now time.Time) []Hour {
	from := windowStart(now)
	var out []Hour
	for _, h := range v.Hours {
		if h.Hour >= from {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b Hour) int { return cmp.Compare(a.Hour, b.Hour) })
	return out
}

// windowStart is the first hour of the window that ends at now, in Unix
// seconds.
func windowStart(now time.Time) int64 { return now.Add(-Window).Truncate(time.Hour).Unix() }
