package main

import (
	"strings"

	"github.com/batonhq/baton/cronx"
)

// badField names the field of a crontab schedule (its fields only, no
// CRON_TZ=) that parser rejects, since robfig/cron's errors name the value
// but not its field. Each field is tried alone, the others "*"; it returns
// "" when none fails alone, as for a descriptor.
func badField(parser cronx.Parser, fields string, seconds bool) string {
	names := []string{"minute", "hour", "day of month", "month", "day of week"}
	if seconds {
		names = append([]string{"second"}, names...)
	}
	given := strings.Fields(fields)
	if len(given) != len(names) {
		return ""
	}
	for i, f := range given {
		probe := make([]string, len(given))
		for j := range probe {
			probe[j] = "*"
		}
		probe[i] = f
		if _, err := parser.Parse(strings.Join(probe, " ")); err != nil {
			return names[i]
		}
	}
	return ""
}
