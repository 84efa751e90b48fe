package cronx

import (
	"fmt"
	"strings"
	"time"
)

// standardParser is robfig/cron's standard parser, which it does not export:
// the five fields of crontab(5), and descriptors.
var standardParser = NewParser(Minute | Hour | Dom | Month | Dow | Descriptor)

// ParseStandard parses a standard crontab spec of five fields (minute, hour,
// day of month, month, day of week), such as "*/5 * * * *", or a descriptor
// such as "@daily" or "@every 1h30m". Either may start with a CRON_TZ= time
// zone. It is cron.ParseStandard, with robfig's errors, except that a spec
// robfig/cron panics on is an error that names it.
func ParseStandard(standardSpec string) (Schedule, error) {
	return parseSpec(standardParser, standardSpec)
}

// parseSpec parses spec with p, robfig's parser or the user's. The parser's
// error is returned as it is, so that a program which shows robfig's text
// to its users shows the same; input that makes the parser panic (robfig's,
// on a time zone with nothing after it) is an error that names the spec,
// because a spec may come from a file or a user rather than the program.
func parseSpec(p ScheduleParser, spec string) (s Schedule, err error) {
	if err := checkZone(spec); err != nil {
		return nil, fmt.Errorf("cronx: parse %q: %w", spec, err)
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cronx: parse %q: the parser panicked: %v", spec, r)
		}
	}()
	if s, err = p.Parse(spec); err != nil {
		return nil, err // mutation:parse-error-robfigs
	}
	if s == nil {
		return nil, fmt.Errorf("cronx: parse %q: the parser returned no schedule", spec)
	}
	return s, nil
}

// checkZone rejects a TZ= or CRON_TZ= prefix with no space after it, which
// robfig's parser slices out of range on.
func checkZone(spec string) error {
	if !strings.HasPrefix(spec, "TZ=") && !strings.HasPrefix(spec, "CRON_TZ=") {
		return nil
	}
	if !strings.Contains(spec, " ") {
		zone, _, _ := strings.Cut(spec, "\t")
		return fmt.Errorf("time zone %s is not followed by a schedule", zone)
	}
	return nil
}

// withLocation returns s, or for a SpecSchedule built without a Location a
// copy in time.Local, which a Cron reads as its own zone: robfig's Next
// would panic on the nil Location in the run loop's goroutine, and crash the
// program.
func withLocation(s Schedule) Schedule {
	if spec, ok := s.(*SpecSchedule); ok && spec != nil && spec.Location == nil {
		local := *spec
		local.Location = time.Local
		return &local
	}
	return s
}
