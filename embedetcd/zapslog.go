package embedetcd

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// benign lists the etcd (v3.7.3) log lines that are demoted to debug. A
// line matches when its level and message are equal and, if err is set, its
// "error" field contains err; entries marked onClose match only while the
// member is being closed (or torn down after failing to start), so the same
// text at any other time keeps its level. Matching is on etcd's own text
// because these conditions reach us only as log lines; the list is short and
// exact, and a test proves a clean start and stop logs nothing above info.
var benign = []struct {
	level   zapcore.Level
	msg     string
	err     string
	onClose bool
}{
	// Close shuts the client and peer listeners; the goroutines serving them
	// report the closed listener or server as an error.
	{zapcore.ErrorLevel, "setting up serving from embedded etcd failed.", "mux: server closed", true},
	{zapcore.ErrorLevel, "setting up serving from embedded etcd failed.", "http: Server closed", true},
	{zapcore.ErrorLevel, "setting up serving from embedded etcd failed.", "use of closed network connection", true},
	{zapcore.ErrorLevel, "setting up serving from embedded etcd failed.", "grpc: the server has been stopped", true},
	{zapcore.ErrorLevel, "setting up serving from embedded etcd failed.", "mux: listener closed", true},
	// A proposal still in flight when the server stops (right after start,
	// etcd publishes the cluster version) is cancelled.
	{zapcore.WarnLevel, "failed to update cluster version", "etcdserver: request cancelled", true},
	// The same proposal, when the stop cancels the server's context before the
	// request is sent (seen once in CI: TestCleanStartStopLogsNoErrors).
	{zapcore.WarnLevel, "failed to update cluster version", "context canceled", true},
	// Work started while the server stops (the cluster-version publish above) is
	// not started.
	{zapcore.WarnLevel, "server has stopped; skipping GoAttach", "", true},
	{zapcore.WarnLevel, "stopping insecure grpc server due to error", "use of closed network connection", true},
	{zapcore.WarnLevel, "stopped insecure grpc server due to error", "use of closed network connection", true},
	{zapcore.WarnLevel, "stopping insecure grpc server due to error", "mux: listener closed", true},
	{zapcore.WarnLevel, "stopped insecure grpc server due to error", "mux: listener closed", true},
	// First start only: etcd's storage-version monitor can run before the
	// backend has committed the raft term; it retries on its next tick
	// (every few seconds) and succeeds.
	{zapcore.WarnLevel, "Failed to detect schema version", "missing term information", false},
	{zapcore.ErrorLevel, "failed to update storage version", "missing term information", false},
	// First start: the election timer can fire before the member has applied the
	// configuration entries that bootstrap its cluster; it campaigns again on the
	// next one. (raft's lines start with the member id, which is not compared.)
	{zapcore.WarnLevel, "cannot campaign at term 1 since there are still pending configuration changes to apply", "", false},
	// Deliberate configuration: gRPC and etcd's small HTTP side (/health,
	// /version) share the client port, and etcd auth is off, so its default
	// "simple" token provider is never used.
	{zapcore.WarnLevel, "Running http and grpc server on single port. This is not recommended for production.", "", false},
	{zapcore.WarnLevel, "simple token is not cryptographically signed", "", false},
}

// demote returns the level to log an etcd entry at.
func demote(ent zapcore.Entry, fields []zapcore.Field, closing bool) zapcore.Level {
	msg := ent.Message
	if ent.LoggerName == "raft" {
		_, msg, _ = strings.Cut(msg, " ") // the member id
	}
	for _, b := range benign {
		if ent.Level != b.level || msg != b.msg || (b.onClose && !closing) {
			continue
		}
		if b.err == "" {
			return zapcore.DebugLevel
		}
		for _, f := range fields {
			if f.Type == zapcore.ErrorType && f.Key == "error" {
				if err, ok := f.Interface.(error); ok && strings.Contains(err.Error(), b.err) {
					return zapcore.DebugLevel
				}
			}
		}
	}
	return ent.Level
}

// newZapLogger returns a zap logger that writes to h. closing tells the
// filter that the member is being shut down.
func newZapLogger(h slog.Handler, closing *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{h: h, closing: closing, repeats: newRepeats()})
}

// slogCore is a zapcore.Core forwarding entries to a slog.Handler. Keys are
// rewritten to the house style (local-member-id becomes local_member_id).
// Benign lines are demoted (benign), and repetitive ones limited (repeats).
type slogCore struct {
	h       slog.Handler
	closing *atomic.Bool
	repeats *repeats
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	if len(fields) == 0 {
		return c
	}
	return &slogCore{h: c.h.WithAttrs(attrs(fields)), closing: c.closing, repeats: c.repeats}
}

func (c *slogCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	// Demotion can only lower a level, so an entry that is disabled at its
	// own level stays disabled; enabled ones are re-checked in Write.
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *slogCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	zl := demote(ent, fields, c.closing.Load())
	held := 0
	if zl > zapcore.DebugLevel {
		var keep bool
		if keep, held = c.repeats.admit(ent); !keep {
			zl = zapcore.DebugLevel
		}
	}
	lvl := slogLevel(zl)
	ctx := context.Background()
	if !c.h.Enabled(ctx, lvl) {
		return nil
	}
	r := slog.NewRecord(ent.Time, lvl, ent.Message, 0)
	if ent.LoggerName != "" {
		r.AddAttrs(slog.String("logger", ent.LoggerName))
	}
	r.AddAttrs(attrs(fields)...)
	if held > 0 {
		r.AddAttrs(slog.Int("repeated_at_debug", held))
	}
	return c.h.Handle(ctx, r)
}

func (c *slogCore) Sync() error { return nil }

// attrs converts zap fields to slog attributes, keeping their order.
func attrs(fields []zapcore.Field) []slog.Attr {
	out := make([]slog.Attr, 0, len(fields))
	for _, f := range fields {
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		for k, v := range enc.Fields {
			out = append(out, slog.Any(strings.ReplaceAll(k, "-", "_"), v))
		}
	}
	return out
}
