package cronx

import (
	"time"

	cron "github.com/robfig/cron/v3"
)

// The names below are robfig/cron v3's own, so that a value made with either
// package is a value of the other: a cron.Schedule, cron.JobWrapper,
// cron.Logger or cron.Parser goes into a cronx.Cron as it is, and what cronx
// returns goes back into robfig/cron code. Their documentation is robfig's.
type (
	// Schedule is cron.Schedule: when a job runs.
	Schedule = cron.Schedule
	// ScheduleParser is cron.ScheduleParser: turns a spec into a Schedule.
	ScheduleParser = cron.ScheduleParser
	// Job is cron.Job: work to run on a schedule.
	Job = cron.Job
	// FuncJob is cron.FuncJob: a func() as a Job.
	FuncJob = cron.FuncJob
	// JobWrapper is cron.JobWrapper: a behaviour added to a job.
	JobWrapper = cron.JobWrapper
	// Chain is cron.Chain: JobWrappers applied in order, the first outermost.
	Chain = cron.Chain
	// Logger is cron.Logger: Info and Error with alternating keys and values,
	// a subset of github.com/go-logr/logr's logger.
	Logger = cron.Logger
	// Parser is cron.Parser: parses specs with the fields NewParser chose.
	// Its Parse is robfig's, errors and all; a Cron's AddFunc and AddJob, and
	// ParseStandard, add the spec to the error and turn robfig's panic on a
	// time zone with no schedule after it into an error.
	Parser = cron.Parser
	// ParseOption is cron.ParseOption: the fields and extensions of a Parser.
	ParseOption = cron.ParseOption
	// SpecSchedule is cron.SpecSchedule: a crontab schedule, to the second.
	SpecSchedule = cron.SpecSchedule
	// ConstantDelaySchedule is cron.ConstantDelaySchedule: a fixed interval,
	// whole seconds.
	ConstantDelaySchedule = cron.ConstantDelaySchedule
	// EntryID is cron.EntryID: identifies an entry within one Cron.
	EntryID = cron.EntryID
)

// The fields and extensions of a Parser, robfig's constants.
const (
	Second         = cron.Second         // seconds field, default 0
	SecondOptional = cron.SecondOptional // optional seconds field, default 0
	Minute         = cron.Minute         // minutes field, default 0
	Hour           = cron.Hour           // hours field, default 0
	Dom            = cron.Dom            // day of month field, default *
	Month          = cron.Month          // month field, default *
	Dow            = cron.Dow            // day of week field, default *
	DowOptional    = cron.DowOptional    // optional day of week field, default *
	Descriptor     = cron.Descriptor     // descriptors such as @monthly and @every 5m
)

// DefaultLogger is cron.DefaultLogger, the logger of a Cron made without
// WithLogger: errors only, to standard output, prefixed "cron: ".
var DefaultLogger = cron.DefaultLogger

// DiscardLogger is cron.DiscardLogger: it drops everything.
var DiscardLogger = cron.DiscardLogger

// NewParser is cron.NewParser. It panics if options holds both
// SecondOptional and DowOptional, a mistake in the program rather than in
// its input.
func NewParser(options ParseOption) Parser { return cron.NewParser(options) }

// Every is cron.Every: a schedule that runs every d, in whole seconds (d is
// cut down to the second, and raised to one second if shorter).
func Every(d time.Duration) ConstantDelaySchedule { return cron.Every(d) }

// NewChain is cron.NewChain: a Chain of wrappers, the first outermost.
func NewChain(wrappers ...JobWrapper) Chain { return cron.NewChain(wrappers...) }

// PrintfLogger is cron.PrintfLogger: it adapts a Printf logger, such as a
// *log.Logger, and logs errors only.
func PrintfLogger(l interface{ Printf(string, ...interface{}) }) Logger {
	return cron.PrintfLogger(l)
}

// VerbosePrintfLogger is cron.VerbosePrintfLogger: it adapts a Printf
// logger and logs everything, starts, wake-ups, runs, additions and removals.
func VerbosePrintfLogger(l interface{ Printf(string, ...interface{}) }) Logger {
	return cron.VerbosePrintfLogger(l)
}
