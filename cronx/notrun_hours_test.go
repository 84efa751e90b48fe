package cronx

import (
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/notrun"
)

// TestNotRunHoursByHour: the counts of a notrun value by hour are its
// hours within the last day, oldest first, with the reasons this version
// knows and counts above zero.
func TestNotRunHoursByHour(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	hour := func(h int) int64 { return now.Truncate(time.Hour).Add(time.Duration(h) * time.Hour).Unix() }
	v := notrun.Value{Hours: []notrun.Hour{
		{Hour: hour(0), Counts: map[string]int{"paused": 3, "overlap": 1}},
		{Hour: hour(-25), Counts: map[string]int{"paused": 9}}, // older than a day
		{Hour: hour(-2), Counts: map[string]int{"no_leader": 2, "someday": 4, "overtaken": 0}},
		{Hour: hour(-3), Counts: map[string]int{"someday": 4}},
	}}
	want := []NotRunHour{
		{Hour: time.Unix(hour(-2), 0), Counts: map[Reason]int{ReasonNoLeader: 2}},
		{Hour: time.Unix(hour(0), 0), Counts: map[Reason]int{ReasonPaused: 3, ReasonOverlap: 1}},
	}
	if _, got := notRunCounts(v, now); !reflect.DeepEqual(got, want) {
		t.Errorf("hours %+v, want %+v", got, want)
	}
}
