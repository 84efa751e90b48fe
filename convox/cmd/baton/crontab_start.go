package main

import (
	"time"

	"github.com/batonhq/baton/cronx"
)

// An entry runs at start with at-start=yes, beside its schedule, or with
// @start as its schedule, alone: once per release of the app in the whole
// cluster (cronx.WithRunAtStart), the release being --release, else
// $RELEASE, which Convox sets in every process.
//
//	migrate: @start ./bin/migrate
//	warm: [at-start=yes] 0 * * * * ./bin/warm-cache

// startSpec is the schedule of an entry that runs only at start.
const startSpec = "@start"

// startOnly is the schedule of startSpec: no tick ever.
type startOnly struct{}

func (startOnly) Next(time.Time) time.Time { return time.Time{} }

// crontabParser is the parser of a crontab's schedules: cronx's, and
// startSpec.
type crontabParser struct{ cronx.Parser }

func (p crontabParser) Parse(spec string) (cronx.Schedule, error) {
	if spec == startSpec {
		return startOnly{}, nil
	}
	return p.Parser.Parse(spec)
}

// firstAtStart returns the first of entries that runs at start.
func firstAtStart(entries []crontabEntry) (crontabEntry, bool) {
	for _, e := range entries {
		if e.runsAtStart() {
			return e, true
		}
	}
	return crontabEntry{}, false
}

// runsAtStart reports whether an entry runs at start: its schedule is
// startSpec, or it has at-start=yes.
func (e crontabEntry) runsAtStart() bool { return e.spec == startSpec || e.atStart }
