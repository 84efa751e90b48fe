package statuspage

import (
	"fmt"
	"time"

	"github.com/batonhq/baton/cronx"
)

// specParsers read a published spec: the standard five fields first, then
// six with seconds, as `baton crontab --seconds` and cronx.WithSeconds
// register them.
var specParsers = []cronx.Parser{
	cronx.NewParser(cronx.Minute | cronx.Hour | cronx.Dom | cronx.Month | cronx.Dow | cronx.Descriptor),
	cronx.NewParser(cronx.Second | cronx.Minute | cronx.Hour | cronx.Dom | cronx.Month | cronx.Dow | cronx.Descriptor),
}

// NextRun is the next tick of spec after last, or after now when that has
// passed; zero when the spec does not parse as five fields or six with
// seconds. A leader that is down or a paused job does not run then.
func NextRun(spec string, last, now time.Time) time.Time {
	for _, p := range specParsers {
		sched, err := parsePublished(p, spec)
		if err != nil {
			continue
		}
		var next time.Time
		if !last.IsZero() {
			next = sched.Next(last)
		}
		if !next.After(now) {
			next = sched.Next(now)
		}
		return next
	}
	return time.Time{}
}

// parsePublished parses a spec read from etcd, which anyone with access may
// have written: robfig/cron's parser panics on some input (a time zone with
// no schedule after it), and a status page must not.
func parsePublished(p cronx.Parser, spec string) (sched cronx.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("parse %q: %v", spec, r)
		}
	}()
	return p.Parse(spec)
}
