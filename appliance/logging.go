package appliance

import (
	"context"
	"log/slog"
)

// quietHandler passes records through with INFO demoted to DEBUG. etcd logs some 50
// INFO lines on every start and stop that say nothing an operator of Skiff acts on;
// its warnings and errors keep their level.
type quietHandler struct{ h slog.Handler }

func (q quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return q.h.Enabled(ctx, l)
}

func (q quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return q.h.Handle(ctx, r)
}

func (q quietHandler) WithAttrs(as []slog.Attr) slog.Handler { return quietHandler{q.h.WithAttrs(as)} }
func (q quietHandler) WithGroup(g string) slog.Handler       { return quietHandler{q.h.WithGroup(g)} }
