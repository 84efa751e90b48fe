package cronx

import (
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// A spec that does not parse is robfig/cron's parser's error, word for
// word, whichever way it reaches the parser (a program may show that text
// to its users); one that robfig's parser panics on is an error naming it.
func TestParseErrorsAreRobfigs(t *testing.T) {
	t.Parallel()
	seconds := NewParser(Second | Minute | Hour | Dom | Month | Dow | Descriptor)
	robfigs := func(p Parser, spec string) string {
		_, err := p.Parse(spec)
		if err == nil {
			t.Fatalf("robfig's parser accepts %q", spec)
		}
		return err.Error()
	}
	tests := []struct {
		parser Parser
		spec   string
		want   string
	}{
		{standardParser, "", robfigs(standardParser, "")},
		{standardParser, "*/5 * *", "expected exactly 5 fields, found 3: [*/5 * *]"},
		{seconds, "* * * * *", robfigs(seconds, "* * * * *")},
		{standardParser, "61 * * * *", robfigs(standardParser, "61 * * * *")},
		{standardParser, "*/0 * * * *", robfigs(standardParser, "*/0 * * * *")},
		{standardParser, "@fortnightly", robfigs(standardParser, "@fortnightly")},
		{NewParser(Minute | Hour), "@daily", robfigs(NewParser(Minute|Hour), "@daily")},
		{standardParser, "CRON_TZ=Mars/Olympus 0 6 * * *", robfigs(standardParser, "CRON_TZ=Mars/Olympus 0 6 * * *")},
		// robfig/cron's parser panics on a zone with nothing after it.
		{standardParser, "TZ=UTC", `cronx: parse "TZ=UTC": time zone TZ=UTC is not followed by a schedule`},
		{seconds, "CRON_TZ=UTC", `cronx: parse "CRON_TZ=UTC": time zone CRON_TZ=UTC is not followed by a schedule`},
	}
	for _, tt := range tests {
		c := New(WithParser(tt.parser), WithLogger(DiscardLogger))
		id, err := c.AddFunc(tt.spec, func() {})
		if err == nil || err.Error() != tt.want {
			t.Errorf("AddFunc(%q) error = %v\nwant %s", tt.spec, err, tt.want)
		}
		if id != 0 || len(c.Entries()) != 0 {
			t.Errorf("AddFunc(%q): a spec that does not parse was added as entry %d", tt.spec, id)
		}
		if tt.parser != standardParser {
			continue
		}
		schedule, err := ParseStandard(tt.spec)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseStandard(%q) error = %v\nwant %s", tt.spec, err, tt.want)
		}
		if schedule != nil {
			t.Errorf("ParseStandard(%q) = %v with an error, want nil", tt.spec, schedule)
		}
	}
}

// panicParser is a program's own parser that panics on some input.
type panicParser struct{}

func (panicParser) Parse(spec string) (Schedule, error) { panic("no " + spec) }

// nilParser is a program's own parser that returns neither a schedule nor
// an error.
type nilParser struct{}

func (nilParser) Parse(string) (Schedule, error) { return nil, nil }

// A parser that panics or returns no schedule costs an error, not the
// program: its schedule would be used in the run loop's goroutine.
func TestAddFuncSurvivesParserFaults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		parser ScheduleParser
		want   string
	}{
		{panicParser{}, `cronx: parse "@daily": the parser panicked: no @daily`},
		{nilParser{}, `cronx: parse "@daily": the parser returned no schedule`},
	} {
		c := New(WithParser(tt.parser), WithLogger(DiscardLogger))
		if _, err := c.AddFunc("@daily", func() {}); err == nil || err.Error() != tt.want {
			t.Errorf("AddFunc with %T: error = %v, want %s", tt.parser, err, tt.want)
		}
	}
}

// Descriptors are the specs the package documentation says they abbreviate.
func TestDescriptors(t *testing.T) {
	t.Parallel()
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

// A SpecSchedule built by hand without a Location runs in the Cron's zone,
// as one in time.Local does, instead of crashing the program: robfig's Next
// panics on a nil Location.
func TestSpecScheduleWithoutLocation(t *testing.T) {
	t.Parallel()
	every := ^uint64(0) // every value of a field
	s := &SpecSchedule{Second: 1, Minute: 1 << 30, Hour: every, Dom: every, Month: every, Dow: every}
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake)
	id := c.Schedule(s, FuncJob(func() {}))
	c.Start()
	if due, want := c.step(t), t0.Add(30*time.Minute); !due.Equal(want) {
		t.Fatalf("the scheduler woke at %v, want %v", due, want)
	}
	if f := c.nextFiring(t); f.id != id {
		t.Fatalf("fired entry %d, want %d", f.id, id)
	}
	if s.Location != nil {
		t.Errorf("the program's schedule was changed: Location = %v", s.Location)
	}
}

// "@every" below a second, or between whole seconds, is rounded as
// robfig/cron rounds it: down to the second, and up to one second. (baton
// crontab refuses such intervals instead.)
func TestEveryRoundsAsRobfig(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]time.Duration{
		"@every 0s":     time.Second,
		"@every 1500ms": time.Second,
		"@every 90s":    90 * time.Second,
	} {
		s, err := ParseStandard(spec)
		if err != nil {
			t.Fatalf("ParseStandard(%q): %v", spec, err)
		}
		if got, ok := s.(ConstantDelaySchedule); !ok || got.Delay != want {
			t.Errorf("ParseStandard(%q) = %#v, want an interval of %v", spec, s, want)
		}
	}
}
