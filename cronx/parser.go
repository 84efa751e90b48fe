package cronx

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// ParseOption selects the fields a Parser expects, and its extensions. The
// fields keep their order (second, minute, hour, day of month, month, day of
// week) whichever are selected; a field left out takes its default.
type ParseOption int

// The fields and extensions of a Parser.
const (
	Second         ParseOption = 1 << iota // seconds field, default 0
	SecondOptional                         // optional seconds field, default 0
	Minute                                 // minutes field, default 0
	Hour                                   // hours field, default 0
	Dom                                    // day of month field, default *
	Month                                  // month field, default *
	Dow                                    // day of week field, default *
	DowOptional                            // optional day of week field, default *
	Descriptor                             // descriptors such as @monthly and @every 5m
)

// specField is one of the six fields of a full spec, in spec order.
type specField struct {
	name     string
	option   ParseOption
	limits   bounds
	fallback string // the value of the field when the parser leaves it out
}

var specFields = [6]specField{
	{"second", Second, seconds, "0"},
	{"minute", Minute, minutes, "0"},
	{"hour", Hour, hours, "0"},
	{"day of month", Dom, dom, "*"},
	{"month", Month, months, "*"},
	{"day of week", Dow, dow, "*"},
}

// Parser parses specs with the fields and extensions chosen by NewParser.
type Parser struct {
	options ParseOption
}

// NewParser returns a Parser for options. For example
//
//	// The standard five fields, without descriptors.
//	NewParser(Minute | Hour | Dom | Month | Dow).Parse("0 0 15 */3 *")
//	// Days only: at midnight on the 15th of every third month.
//	NewParser(Dom | Month | Dow).Parse("15 */3 *")
//	// The same, the day of week may be left out.
//	NewParser(Dom | Month | DowOptional).Parse("15 */3")
//
// At most one field may be optional, or a spec's fields could not be told
// apart: NewParser panics if options holds both SecondOptional and
// DowOptional, since that is a mistake in the program, not in its input.
func NewParser(options ParseOption) Parser {
	if options&SecondOptional != 0 && options&DowOptional != 0 {
		panic("cronx: NewParser: SecondOptional and DowOptional together: at most one field may be optional")
	}
	return Parser{options: options}
}

// standardParser parses the five fields of crontab(5), and descriptors.
var standardParser = NewParser(Minute | Hour | Dom | Month | Dow | Descriptor)

// ParseStandard parses a standard crontab spec of five fields (minute, hour,
// day of month, month, day of week), such as "*/5 * * * *", or a descriptor
// such as "@daily" or "@every 1h30m". Either may start with a CRON_TZ= time
// zone. The error names the spec and what is wrong with it.
func ParseStandard(standardSpec string) (Schedule, error) {
	return standardParser.Parse(standardSpec)
}

// Parse returns the schedule of spec, or an error that names the spec and
// what is wrong with it.
func (p Parser) Parse(spec string) (Schedule, error) {
	schedule, err := p.parse(spec)
	if err != nil {
		return nil, fmt.Errorf("cronx: parse %q: %w", spec, err)
	}
	return schedule, nil
}

func (p Parser) parse(spec string) (Schedule, error) {
	if spec == "" {
		return nil, errors.New("empty spec string")
	}
	loc, spec, err := cutZone(spec)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(spec, "@") {
		if p.options&Descriptor == 0 {
			return nil, fmt.Errorf("parser does not accept descriptors: %s", spec)
		}
		return parseDescriptor(spec, loc)
	}
	fields, err := normalizeFields(strings.Fields(spec), p.options)
	if err != nil {
		return nil, err
	}
	return parseFields(fields, loc)
}

// cutZone splits a leading TZ= or CRON_TZ= prefix off spec. A spec without
// one is in time.Local, which a Cron reads as its own location.
func cutZone(spec string) (*time.Location, string, error) {
	if !strings.HasPrefix(spec, "TZ=") && !strings.HasPrefix(spec, "CRON_TZ=") {
		return time.Local, spec, nil
	}
	end := strings.IndexFunc(spec, unicode.IsSpace)
	if end < 0 {
		return nil, "", fmt.Errorf("time zone %s is not followed by a schedule", spec)
	}
	_, name, _ := strings.Cut(spec[:end], "=")
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, "", fmt.Errorf("provided bad location %s: %w", name, err)
	}
	return loc, strings.TrimSpace(spec[end:]), nil
}

// normalizeFields checks that fields has the number of fields options asks
// for and returns all six, in spec order, with defaults for those left out.
func normalizeFields(fields []string, options ParseOption) ([]string, error) {
	optional := options & (SecondOptional | DowOptional)
	if optional == SecondOptional|DowOptional {
		return nil, errors.New("multiple optionals may not be configured")
	}
	if optional == SecondOptional {
		options |= Second
	}
	if optional == DowOptional {
		options |= Dow
	}

	most := 0
	for _, f := range specFields {
		if options&f.option != 0 {
			most++
		}
	}
	least := most
	if optional != 0 {
		least--
	}
	switch n := len(fields); {
	case (n < least || n > most) && least == most:
		return nil, fmt.Errorf("expected exactly %d fields, found %d", most, n)
	case n < least || n > most:
		return nil, fmt.Errorf("expected %d to %d fields, found %d", least, most, n)
	}

	if len(fields) < most {
		// The optional field was left out: put in its default, without
		// writing into the caller's slice.
		if optional == SecondOptional {
			fields = append([]string{specFields[0].fallback}, fields...)
		} else {
			fields = append(fields[:len(fields):len(fields)], specFields[5].fallback)
		}
	}

	full := make([]string, len(specFields))
	for i, f := range specFields {
		if options&f.option != 0 {
			full[i], fields = fields[0], fields[1:]
		} else {
			full[i] = f.fallback
		}
	}
	return full, nil
}

// parseFields builds the schedule of the six fields of a full spec.
func parseFields(fields []string, loc *time.Location) (*SpecSchedule, error) {
	var bits [len(specFields)]uint64
	for i, f := range specFields {
		b, err := getField(fields[i], f.limits)
		if err != nil {
			return nil, fmt.Errorf("%s field: %w", f.name, err)
		}
		bits[i] = b
	}
	return &SpecSchedule{
		Second:   bits[0],
		Minute:   bits[1],
		Hour:     bits[2],
		Dom:      bits[3],
		Month:    bits[4],
		Dow:      bits[5],
		Location: loc,
	}, nil
}
