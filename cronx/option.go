package cronx

import (
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// Option configures a Cron in New.
type Option func(*Cron)

// settings are what New's options set, never written after New returns.
type settings struct {
	chain   Chain
	jobOpts []JobOption // every job's policy, under its own (policy.go)
	logger  Logger
	// loggerSet says that an option chose logger.
	loggerSet bool
	location  *time.Location
	parser    ScheduleParser
	clock     clock.Clock
	coordCfg  *coordConfig // nil: coordinated only if the environment says so

	// fireHook, when set, sees every run that fire starts, with the tick it
	// was given. Tests use it to check that runs carry nominal ticks.
	fireHook func(e Entry, tick time.Time)
	// flushEvery, when set, replaces notRunFlush, so that tests read the
	// counts of ticks not run soon.
	flushEvery time.Duration
	// recordWait, when set, replaces shutdownRecordWait, so that a test on
	// a loaded machine sees the records that Shutdown waits for.
	recordWait time.Duration
}

// defaultSettings are a Cron's without options: schedules in time.Local,
// the standard five-field parser, no JobWrapper, DefaultLogger, the
// process's clock.
func defaultSettings() settings {
	return settings{
		chain:    NewChain(),
		logger:   DefaultLogger,
		location: time.Local,
		parser:   standardParser,
		clock:    clock.Process(),
	}
}

// coordConfig returns the coordination options, made at the first.
func (s *settings) coordConfig() *coordConfig {
	if s.coordCfg == nil {
		s.coordCfg = &coordConfig{grace: DefaultMisfireGrace}
	}
	return s.coordCfg
}

// WithLocation makes the Cron interpret schedules in loc instead of
// time.Local. A spec's own CRON_TZ= prefix still wins.
func WithLocation(loc *time.Location) Option {
	return func(c *Cron) { c.location = loc }
}

// WithSeconds makes specs start with a required seconds field, as Quartz
// does: "30 * * * * *" runs at half past every minute.
func WithSeconds() Option {
	return WithParser(NewParser(Second | Minute | Hour | Dom | Month | Dow | Descriptor))
}

// WithParser makes the Cron parse the specs given to AddFunc and AddJob
// with p.
func WithParser(p ScheduleParser) Option {
	return func(c *Cron) { c.parser = p }
}

// WithChain wraps every job added to the Cron in wrappers, the first
// outermost. It replaces the default chain, which is empty.
func WithChain(wrappers ...JobWrapper) Option {
	return func(c *Cron) { c.chain = NewChain(wrappers...) }
}

// WithLogger makes the Cron log through logger instead of DefaultLogger.
func WithLogger(logger Logger) Option {
	return func(c *Cron) { c.logger, c.loggerSet = logger, true }
}

// WithSlog makes the Cron log through l, with routine messages at debug
// level and leadership gained and lost, and etcd refusing writes and
// accepting them again, at info; it is WithLogger(SlogLogger(l)).
func WithSlog(l *slog.Logger) Option {
	return WithLogger(SlogLogger(l))
}

// withClock makes the Cron read time and set timers on clk, so that tests
// step time instead of sleeping.
func withClock(clk clock.Clock) Option {
	return func(c *Cron) { c.clock = clk }
}
