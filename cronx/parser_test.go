package cronx

import (
	"testing"
	"time"
)

// Every parse error names the spec and says what is wrong with it.
func TestParseErrors(t *testing.T) {
	seconds := NewParser(Second | Minute | Hour | Dom | Month | Dow | Descriptor)
	tests := []struct {
		parser Parser
		spec   string
		want   string
	}{
		{standardParser, "", `cronx: parse "": empty spec string`},
		{standardParser, "*/5 * *", `cronx: parse "*/5 * *": expected exactly 5 fields, found 3`},
		{seconds, "* * * * *", `cronx: parse "* * * * *": expected exactly 6 fields, found 5`},
		{NewParser(SecondOptional | Minute | Hour | Dom | Month | Dow), "* * * *", `cronx: parse "* * * *": expected 5 to 6 fields, found 4`},
		{standardParser, "61 * * * *", `cronx: parse "61 * * * *": minute field: range "61": end of range 61 above maximum 59`},
		{standardParser, "0 0 0 * *", `cronx: parse "0 0 0 * *": day of month field: range "0": beginning of range 0 below minimum 1`},
		{standardParser, "0 0 * * fri-mon", `cronx: parse "0 0 * * fri-mon": day of week field: range "fri-mon": beginning of range 5 beyond end of range 1`},
		{standardParser, "0 0 * foo *", `cronx: parse "0 0 * foo *": month field: range "foo": failed to parse int from "foo"`},
		{standardParser, "1,5--7 * * * *", `cronx: parse "1,5--7 * * * *": minute field: range "5--7": too many hyphens`},
		{standardParser, "*/5/2 * * * *", `cronx: parse "*/5/2 * * * *": minute field: range "*/5/2": too many slashes`},
		{standardParser, "*/0 * * * *", `cronx: parse "*/0 * * * *": minute field: range "*/0": step of range should be a positive number`},
		{standardParser, "*/-1 * * * *", `cronx: parse "*/-1 * * * *": minute field: range "*/-1": negative number -1 not allowed`},
		{standardParser, "@fortnightly", `cronx: parse "@fortnightly": unrecognized descriptor: @fortnightly`},
		{standardParser, "@every fortnight", `cronx: parse "@every fortnight": failed to parse duration @every fortnight: time: invalid duration "fortnight"`},
		{NewParser(Minute | Hour), "@daily", `cronx: parse "@daily": parser does not accept descriptors: @daily`},
		{standardParser, "CRON_TZ=Mars/Olympus 0 6 * * *", `cronx: parse "CRON_TZ=Mars/Olympus 0 6 * * *": provided bad location Mars/Olympus: unknown time zone Mars/Olympus`},
		// robfig/cron panics on a zone with nothing after it.
		{standardParser, "TZ=UTC", `cronx: parse "TZ=UTC": time zone TZ=UTC is not followed by a schedule`},
	}
	for _, tt := range tests {
		schedule, err := tt.parser.Parse(tt.spec)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error = %v\nwant %s", tt.spec, err, tt.want)
		}
		if schedule != nil {
			t.Errorf("Parse(%q) = %v with an error, want nil", tt.spec, schedule)
		}
	}
}

func TestAddFuncNamesSpecInError(t *testing.T) {
	c := New(WithLogger(DiscardLogger))
	id, err := c.AddFunc("*/5 * *", func() {})
	if want := `cronx: parse "*/5 * *": expected exactly 5 fields, found 3`; err == nil || err.Error() != want {
		t.Fatalf("AddFunc error = %v, want %s", err, want)
	}
	if id != 0 || len(c.Entries()) != 0 {
		t.Fatalf("a spec that does not parse was added as entry %d", id)
	}
}

// Descriptors are the specs they abbreviate.
func TestDescriptors(t *testing.T) {
	seconds := NewParser(Second | Minute | Hour | Dom | Month | Dow)
	for descriptor, spec := range map[string]string{
		"@yearly":   "0 0 0 1 1 *",
		"@annually": "0 0 0 1 Jan ?",
		"@monthly":  "0 0 0 1 * ?",
		"@weekly":   "0 0 0 ? * sun",
		"@daily":    "0 0 0 * * ?",
		"@midnight": "0 0 0 * * *",
		"@hourly":   "0 0 * * * *",
	} {
		got, err := ParseStandard(descriptor)
		if err != nil {
			t.Fatal(err)
		}
		want, err := seconds.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		from := time.Date(2026, 5, 17, 13, 14, 15, 0, time.UTC)
		for range 5 {
			g, w := got.Next(from), want.Next(from)
			if !g.Equal(w) {
				t.Errorf("%s: Next(%v) = %v, want %v as for %q", descriptor, from, g, w, spec)
				break
			}
			from = g
		}
	}
}

// A SpecSchedule built by hand without a Location follows the time it is
// given, as one in time.Local does, instead of panicking.
func TestSpecScheduleWithoutLocation(t *testing.T) {
	s := &SpecSchedule{Second: 1, Minute: 1 << 30, Hour: all(hours), Dom: all(dom), Month: all(months), Dow: all(dow)}
	from := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	if got, want := s.Next(from), from.Add(30*time.Minute); !got.Equal(want) {
		t.Fatalf("Next = %v, want %v", got, want)
	}
}
