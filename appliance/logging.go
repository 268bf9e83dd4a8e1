package appliance

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
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

// NewLogger builds a node's structured logger (log-level, log-format) writing to
// w: JSON, or human text for log-format text, or for auto when w is a terminal
// (terminal) and the node does not run under journald (JOURNAL_STREAM unset).
func NewLogger(w io.Writer, level, format string, terminal bool) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "auto":
		if os.Getenv("JOURNAL_STREAM") == "" && terminal {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log-format %q: use auto, json or text", format)
}
