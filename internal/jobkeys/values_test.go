package jobkeys

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// at is a time with nanoseconds, which the time encodings keep.
var at = time.Date(2024, 3, 1, 12, 30, 0, 5, time.UTC)

// TestOutcomeValue: an outcome reads back as written, in the JSON that
// etcd holds; a damaged value reads as much as decodes, an absent key as
// the zero Outcome.
func TestOutcomeValue(t *testing.T) {
	o := Outcome{LastSuccess: at, LastFailure: at.Add(time.Hour), Failures: 2, Tick: 42}
	enc := o.Encode()
	const want = `{"last_success":"2024-03-01T12:30:00.000000005Z","last_failure":"2024-03-01T13:30:00.000000005Z","failures":2,"tick":42}`
	if enc != want {
		t.Errorf("Encode = %s, want %s", enc, want)
	}
	if got := ParseOutcome([]byte(enc)); got != o {
		t.Errorf("ParseOutcome(Encode) = %+v, want %+v", got, o)
	}
	if got := (Outcome{}).Encode(); got != `{}` {
		t.Errorf("the zero Outcome encodes as %s, want {}", got)
	}
	if got := DecodeOutcome([]*mvccpb.KeyValue{{Value: []byte(enc)}}); got != o {
		t.Errorf("DecodeOutcome = %+v, want %+v", got, o)
	}
	if got := DecodeOutcome(nil); got != (Outcome{}) {
		t.Errorf("DecodeOutcome(absent) = %+v, want the zero Outcome", got)
	}
	if got := ParseOutcome([]byte(`{"x`)); got != (Outcome{}) {
		t.Errorf("ParseOutcome(damaged) = %+v, want the zero Outcome", got)
	}
	if got := ParseOutcome([]byte(`{"failures":3,"tick":"x"}`)); got != (Outcome{Failures: 3}) {
		t.Errorf("ParseOutcome(partly damaged) = %+v, want what decodes", got)
	}
}

// TestBackfillValue: a backfill reads back as written, in the JSON etcd
// holds; a damaged value reads as much as decodes.
func TestBackfillValue(t *testing.T) {
	b := Backfill{From: 1, To: 2, Max: 3, Ticks: 4, Done: 5, Last: 6, Finished: true, Refused: "r", By: "b", At: 7}
	enc := b.Encode()
	const want = `{"from":1,"to":2,"max":3,"ticks":4,"done":5,"last":6,"finished":true,"refused":"r","by":"b","at":7}`
	if enc != want {
		t.Errorf("Encode = %s, want %s", enc, want)
	}
	if got := ParseBackfill([]byte(enc)); got != b {
		t.Errorf("ParseBackfill(Encode) = %+v, want %+v", got, b)
	}
	if got := (Backfill{}).Encode(); got != `{"from":0,"to":0,"max":0}` {
		t.Errorf("the zero Backfill encodes as %s", got)
	}
	if got := ParseBackfill([]byte(`not json`)); got != (Backfill{}) {
		t.Errorf("ParseBackfill(damaged) = %+v, want the zero Backfill", got)
	}
	if got := ParseBackfill([]byte(`{"from":1,"to":"x"}`)); got != (Backfill{From: 1}) {
		t.Errorf("ParseBackfill(partly damaged) = %+v, want what decodes", got)
	}
}

// TestRunsValue: a runs value reads back as written; a damaged one is an
// error.
func TestRunsValue(t *testing.T) {
	r := Runs{Max: 3, Start: at, End: at.Add(time.Hour)}
	enc := r.Encode()
	if want := `{"max":3,"start":"2024-03-01T12:30:00.000000005Z","end":"2024-03-01T13:30:00.000000005Z"}`; enc != want {
		t.Errorf("Encode = %s, want %s", enc, want)
	}
	if got, err := ParseRuns([]byte(enc)); err != nil || got != r {
		t.Errorf("ParseRuns(Encode) = %+v, %v, want %+v", got, err, r)
	}
	if got := (Runs{}).Encode(); got != `{}` {
		t.Errorf("the zero Runs encodes as %s, want {}", got)
	}
	if _, err := ParseRuns([]byte(`{"x`)); err == nil {
		t.Error("ParseRuns(damaged): no error")
	}
}

// TestPausedValue: who paused, and why when there is a reason, read back;
// a pause by hand is who alone.
func TestPausedValue(t *testing.T) {
	if got := EncodePaused("web-1", ""); got != "web-1" {
		t.Errorf("EncodePaused(no reason) = %q, want who alone", got)
	}
	for _, reason := range []string{"", "3 consecutive failures"} {
		if by, why := ParsePaused([]byte(EncodePaused("web-1", reason))); by != "web-1" || why != reason {
			t.Errorf("ParsePaused(EncodePaused(%q)) = %q %q", reason, by, why)
		}
	}
}

// TestRecoveredValue: a recovered value reads back as written, keeps the
// latest MaxRecoveredTicks ticks, and reads damaged as empty, never nil.
func TestRecoveredValue(t *testing.T) {
	v := Recovered{}
	for seq := int64(1); seq <= MaxRecoveredTicks+2; seq++ {
		enc, n := v.With(seq)
		if n != 1 {
			t.Fatalf("tick %d recovered %d times, want 1", seq, n)
		}
		if seq == 1 && enc != `{"1":1}` {
			t.Errorf("With(1) = %s, want {\"1\":1}", enc)
		}
		v = ParseRecovered([]byte(enc))
	}
	want := Recovered{}
	for seq := 3; seq <= MaxRecoveredTicks+2; seq++ {
		want[strconv.Itoa(seq)] = 1
	}
	if !maps.Equal(v, want) {
		t.Errorf("recovered: %v, want %v", v, want)
	}
	if _, n := v.With(MaxRecoveredTicks + 2); n != 2 || v[strconv.Itoa(MaxRecoveredTicks+2)] != 1 {
		t.Errorf("a tick recovered again: %d (and the value read changed: %v), want 2", n, v)
	}
	if got := ParseRecovered([]byte(`{"x`)); got == nil || len(got) != 0 {
		t.Errorf("ParseRecovered(damaged) = %#v, want empty, not nil", got)
	}
}

// TestStartedValue: the releases read back as written, the latest
// StartedReleases of them; a damaged value reads as none.
func TestStartedValue(t *testing.T) {
	enc := EncodeStarted([]string{"r1"}, "r2")
	if enc != `["r1","r2"]` {
		t.Errorf("EncodeStarted = %s", enc)
	}
	got, rev := DecodeStarted([]*mvccpb.KeyValue{{Value: []byte(enc), ModRevision: 9}})
	if !slices.Equal(got, []string{"r1", "r2"}) || rev != 9 {
		t.Errorf("DecodeStarted = %q %d", got, rev)
	}
	if got, rev := DecodeStarted(nil); got != nil || rev != 0 {
		t.Errorf("DecodeStarted(absent) = %q %d", got, rev)
	}
	var ran []string
	for i := range StartedReleases + 2 {
		ran = ParseStarted([]byte(EncodeStarted(ran, "r"+strconv.Itoa(i))))
	}
	if len(ran) != StartedReleases || ran[0] != "r2" || ran[len(ran)-1] != "r"+strconv.Itoa(StartedReleases+1) {
		t.Errorf("after %d releases: %q, want the latest %d", StartedReleases+2, ran, StartedReleases)
	}
	if got := ParseStarted([]byte(`{"x`)); got != nil {
		t.Errorf("ParseStarted(damaged) = %q, want none", got)
	}
}

// TestTriggerValue: a request reads back as written, its release only when
// it has one; a damaged value, or an older version's plain text, is an
// error.
func TestTriggerValue(t *testing.T) {
	if got := EncodeTrigger("b", at, ""); got != `{"by":"b","at":1709296200000000005}` {
		t.Errorf("EncodeTrigger = %s", got)
	}
	enc := EncodeTrigger("b", at, "r9")
	if enc != `{"by":"b","at":1709296200000000005,"release":"r9"}` {
		t.Errorf("EncodeTrigger(release) = %s", enc)
	}
	if got, err := ParseTrigger([]byte(enc)); err != nil || got != (Trigger{By: "b", At: at.UnixNano(), Release: "r9"}) {
		t.Errorf("ParseTrigger(EncodeTrigger) = %+v, %v", got, err)
	}
	for _, v := range []string{`{"x`, "web-1"} {
		if _, err := ParseTrigger([]byte(v)); err == nil {
			t.Errorf("ParseTrigger(%q): no error", v)
		}
	}
}

// TestRosterValues: the roster's jobs and stopped values read back as
// written; damaged ones are errors.
func TestRosterValues(t *testing.T) {
	r := Roster{Jobs: []string{"a", "b"}, By: "web-1", At: at}
	enc := r.Encode()
	if want := `{"jobs":["a","b"],"by":"web-1","at":"2024-03-01T12:30:00.000000005Z"}`; enc != want {
		t.Errorf("Roster.Encode = %s, want %s", enc, want)
	}
	if got, err := ParseRoster([]byte(enc)); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("ParseRoster(Encode) = %+v, %v, want %+v", got, err, r)
	}
	s := Stopped{By: "web-1", At: at}
	enc = s.Encode()
	if want := `{"by":"web-1","at":"2024-03-01T12:30:00.000000005Z"}`; enc != want {
		t.Errorf("Stopped.Encode = %s, want %s", enc, want)
	}
	if got, err := ParseStopped([]byte(enc)); err != nil || got != s {
		t.Errorf("ParseStopped(Encode) = %+v, %v, want %+v", got, err, s)
	}
	if _, err := ParseRoster([]byte(`{"x`)); err == nil {
		t.Error("ParseRoster(damaged): no error")
	}
	if _, err := ParseStopped([]byte(`not json`)); err == nil {
		t.Error("ParseStopped(damaged): no error")
	}
}
