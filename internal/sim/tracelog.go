package sim

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// traceHandler turns the production packages' warnings (recovery cutting
// a torn tail, a quorum snapshot, a failed fsync) into trace lines of the
// node that logged them. Info and debug records are dropped: they would
// drown the trace.
type traceHandler struct {
	n     *node
	attrs []slog.Attr
}

func (h traceHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h traceHandler) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "log %s: %s", r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	h.n.tracef("%s", sb.String())
	return nil
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{n: h.n, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h traceHandler) WithGroup(string) slog.Handler { return h }
