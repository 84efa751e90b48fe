package cronx

import (
	"io"
	"log"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Logger is how a Cron and its wrappers report what they do: Info for
// routine events, Error for failures, each with alternating keys and values.
// It is a subset of github.com/go-logr/logr's logger, so structured loggers
// plug in.
type Logger interface {
	// Info logs a routine event.
	Info(msg string, keysAndValues ...interface{})
	// Error logs a failure.
	Error(err error, msg string, keysAndValues ...interface{})
}

// DefaultLogger is the logger of a Cron made without WithLogger: errors only,
// to standard output, prefixed "cron: " as robfig/cron's are, so that
// existing log filters keep matching.
var DefaultLogger Logger = PrintfLogger(log.New(os.Stdout, "cron: ", log.LstdFlags))

// DiscardLogger drops everything.
var DiscardLogger Logger = PrintfLogger(log.New(io.Discard, "", 0))

// PrintfLogger adapts a Printf logger, such as a *log.Logger, to Logger. It
// logs errors only.
func PrintfLogger(l interface{ Printf(string, ...interface{}) }) Logger {
	return printfLogger{logger: l}
}

// VerbosePrintfLogger adapts a Printf logger, such as a *log.Logger, to
// Logger. It logs everything: starts, wake-ups, runs, additions and
// removals.
func VerbosePrintfLogger(l interface{ Printf(string, ...interface{}) }) Logger {
	return printfLogger{logger: l, verbose: true}
}

// printfLogger writes a line such as "run, now=2026-01-02T15:04:05Z, entry=1".
type printfLogger struct {
	logger  interface{ Printf(string, ...interface{}) }
	verbose bool
}

func (l printfLogger) Info(msg string, keysAndValues ...interface{}) {
	if l.verbose {
		l.print(msg, keysAndValues)
	}
}

func (l printfLogger) Error(err error, msg string, keysAndValues ...interface{}) {
	l.print(msg, append([]interface{}{"error", err}, keysAndValues...))
}

// print hands the values to Printf as arguments rather than formatting them
// first, so that the wrapped logger sees them as its own Printf calls would.
// A key without a value is left for Printf to flag as %!(EXTRA …).
func (l printfLogger) print(msg string, kv []interface{}) {
	format := "%s"
	if len(kv) > 0 {
		format += ", " + strings.TrimPrefix(strings.Repeat(", %v=%v", len(kv)/2), ", ")
	}
	args := make([]interface{}, 0, 1+len(kv))
	args = append(args, msg)
	for _, v := range kv {
		if t, ok := v.(time.Time); ok {
			v = t.Format(time.RFC3339)
		}
		args = append(args, v)
	}
	l.logger.Printf(format, args...)
}

// SlogLogger makes a *slog.Logger a Logger: Info logs at debug level, as
// robfig/cron's routine messages are only for verbose output, and Error at
// error level with the error under "err".
func SlogLogger(l *slog.Logger) Logger {
	return slogLogger{l}
}

type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Info(msg string, keysAndValues ...interface{}) {
	s.l.Debug(msg, keysAndValues...)
}

func (s slogLogger) Error(err error, msg string, keysAndValues ...interface{}) {
	s.l.Error(msg, append([]interface{}{"err", err}, keysAndValues...)...)
}
