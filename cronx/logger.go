package cronx

import "log/slog"

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
