package cronx

import (
	"fmt"
	"strings"
	"time"
)

// descriptors spells out each named schedule as the six fields (seconds
// first) it stands for.
var descriptors = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

const everyPrefix = "@every "

// parseDescriptor returns the schedule of a descriptor: a named schedule
// such as @daily, or "@every <duration>".
func parseDescriptor(descriptor string, loc *time.Location) (Schedule, error) {
	if spec, ok := descriptors[descriptor]; ok {
		return parseFields(strings.Fields(spec), loc)
	}
	if text, ok := strings.CutPrefix(descriptor, everyPrefix); ok {
		d, err := time.ParseDuration(text)
		if err != nil {
			return nil, fmt.Errorf("failed to parse duration %s: %w", descriptor, err)
		}
		return Every(d), nil
	}
	return nil, fmt.Errorf("unrecognized descriptor: %s", descriptor)
}
