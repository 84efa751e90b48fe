package notrun

import (
	"reflect"
	"testing"
	"time"
)

// TestCountsAreKeptByHourForADay: ticks of one hour add up under it, an
// hour older than the window is dropped, and the hours read back oldest
// first through the key's encoding.
func TestCountsAreKeptByHourForADay(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	hour := func(h int) int64 { return now.Truncate(time.Hour).Add(time.Duration(h) * time.Hour).Unix() }
	var v Value
	v.Add(hour(0), "paused", 2)
	v.Add(hour(-25), "paused", 9)
	v.Add(hour(-2), "no_leader", 1)
	v.Add(hour(0), "paused", 1)
	v.Add(hour(0), "overlap", 4)
	want := []Hour{
		{Hour: hour(-2), Counts: map[string]int{"no_leader": 1}},
		{Hour: hour(0), Counts: map[string]int{"paused": 3, "overlap": 4}},
	}
	if got := Parse([]byte(v.Encode())).Within(now); !reflect.DeepEqual(got, want) {
		t.Errorf("within a day %+v, want %+v", got, want)
	}
	v.Prune(now)
	if len(v.Hours) != 2 {
		t.Errorf("pruned to %+v, want the two hours of the last day", v.Hours)
	}
	if got := Parse([]byte("{damaged")); got.Upto != 0 || len(got.Hours) != 0 {
		t.Errorf("a damaged value read as %+v, want nothing", got)
	}
}
