package main

import (
	"os"
	"strings"
	"sync/atomic"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdLogger logs etcd's messages at level and above to stderr, as JSON
// lines like etcd's own, less the noise of a normal start and stop.
// While the member starts, a fatal message (a data dir etcd cannot use)
// panics with startFailure, which serveEtcd recovers and reports in one
// line; later it exits 1, as etcd's own logger would.
func etcdLogger(env *environ, level string, st *memberState) *zap.Logger {
	var lvl zapcore.Level
	_ = lvl.Set(level) // checked against etcdLogLevels
	core := zapcore.NewCore(zapcore.NewJSONEncoder(logutil.DefaultZapLoggerConfig.EncoderConfig), zapcore.AddSync(env.stderr), lvl)
	return zap.New(quietCore{core, &st.started, &st.stopping}, zap.AddCaller(), zap.WithFatalHook(fatalHook{&st.started}))
}

// memberState is what the logger needs to know of the member's life.
type memberState struct {
	started, stopping atomic.Bool
}

// startFailure is a fatal message of etcd while the member starts.
type startFailure string

type fatalHook struct{ started *atomic.Bool }

func (h fatalHook) OnWrite(ce *zapcore.CheckedEntry, fields []zapcore.Field) {
	if h.started.Load() {
		os.Exit(exitFailure)
	}
	msg := ce.Message
	for _, f := range fields {
		if err, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType {
			msg += ": " + err.Error()
		}
	}
	panic(startFailure(msg))
}

// quietCore drops etcd's messages that say nothing wrong here: that clients
// and gRPC share a port, which is the point, since a Convox service has one
// port and /health must be on it; once the member is stopping, those of its
// listeners being closed; and, while it starts, its bootstrap's failure,
// which baton reports itself in one line (a corrupt write-ahead log, for
// one).
type quietCore struct {
	zapcore.Core
	started, stopping *atomic.Bool
}

const (
	singlePortWarning = "Running http and grpc server on single port. This is not recommended for production."
	servingClosed     = "setting up serving from embedded etcd failed."
	bootstrapFailed   = "bootstrap failed"
)

func (c quietCore) With(fields []zapcore.Field) zapcore.Core {
	return quietCore{c.Core.With(fields), c.started, c.stopping}
}

func (c quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Message == singlePortWarning || e.Message == bootstrapFailed && !c.started.Load() || c.stopping.Load() && (e.Message == servingClosed || strings.HasSuffix(e.Message, " grpc server due to error")) {
		return ce
	}
	return c.Core.Check(e, ce)
}
