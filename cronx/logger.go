package cronx

import "log/slog"

// SlogLogger makes a *slog.Logger a Logger: Info logs at debug level, as
// robfig/cron's routine messages are only for verbose output, and Error at
// error level with the error under "err". The few changes an operator must
// hear of without verbose output (this replica gaining or losing the
// leadership, etcd refusing its writes and accepting them again) are at
// info level.
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

func (s slogLogger) notice(msg string, keysAndValues ...interface{}) {
	s.l.Info(msg, keysAndValues...)
}

// noticer is a Logger with a level between robfig's routine Info and Error.
type noticer interface {
	notice(msg string, keysAndValues ...interface{})
}

// notice logs a change an operator must hear of: at info level through
// SlogLogger, as Info through any other Logger (robfig's Loggers have no
// level between Info and Error).
func notice(l Logger, msg string, keysAndValues ...interface{}) {
	if n, ok := l.(noticer); ok {
		n.notice(msg, keysAndValues...)
		return
	}
	l.Info(msg, keysAndValues...)
}
