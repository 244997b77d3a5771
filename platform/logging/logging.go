// Package logging builds the structured loggers every BoxOffice process writes with.
//
// A log line is JSON, one object per line, so a log pipeline can filter and join on fields
// instead of parsing prose. Every line names the service that wrote it (in the all-in-one
// mode many services share one stdout), and a line written with a context that carries an
// OpenTelemetry span also carries that span's trace_id and span_id: from a slow trace in
// Jaeger you can find the log lines of the same request, and back.
//
// Log with the Context variants so the trace can be found:
//
//	logger.InfoContext(ctx, "hold created", "event", id)
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// New returns a logger writing JSON lines to w at level and above. Every record carries
// service, and trace_id/span_id (top level, whatever groups the logger opened) when its
// context holds a valid span. The logger is safe for concurrent use, as w must be.
func New(w io.Writer, level slog.Level, service string) *slog.Logger {
	inner := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	h := inner.WithAttrs([]slog.Attr{slog.String("service", service)})
	return slog.New(&traceHandler{inner: h, root: h})
}

// Discard returns a logger that drops every record; it is what a nil *slog.Logger means
// throughout BoxOffice.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// ParseLevel reads a level name: debug, info, warn or error, in any case.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("parse log level %q: want debug, info, warn or error", s)
}

// traceHandler adds the trace and span ids of the record's context.
//
// Ids added to a record land inside the groups the logger opened (logger.WithGroup("db")
// would write db.trace_id), which a log query would not find. So the handler remembers root,
// the handler before the first group, and the steps taken since; a record with a span inside
// a group is written by root plus the ids, with the steps replayed. That costs a few
// allocations per such record, and nothing for records without a span or outside groups.
type traceHandler struct {
	inner slog.Handler                      // handles records; has every attr and group
	root  slog.Handler                      // inner before the first WithGroup
	steps []func(slog.Handler) slog.Handler // WithGroup/WithAttrs since root, in order
}

var _ slog.Handler = (*traceHandler)(nil)

func (h *traceHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return h.inner.Handle(ctx, r)
	}
	ids := []slog.Attr{
		slog.String("trace_id", sc.TraceID().String()),
		slog.String("span_id", sc.SpanID().String()),
	}
	if len(h.steps) == 0 {
		r = r.Clone() // the caller's record may share its attrs with other handlers
		r.AddAttrs(ids...)
		return h.inner.Handle(ctx, r)
	}
	out := h.root.WithAttrs(ids)
	for _, step := range h.steps {
		out = step(out)
	}
	return out.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	if len(h.steps) == 0 {
		inner := h.inner.WithAttrs(attrs)
		return &traceHandler{inner: inner, root: inner}
	}
	return h.with(func(next slog.Handler) slog.Handler { return next.WithAttrs(attrs) })
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(func(next slog.Handler) slog.Handler { return next.WithGroup(name) })
}

// with derives a handler one step further from root; steps is copied so siblings derived
// from the same parent never share a backing array.
func (h *traceHandler) with(step func(slog.Handler) slog.Handler) *traceHandler {
	steps := append(h.steps[:len(h.steps):len(h.steps)], step)
	return &traceHandler{inner: step(h.inner), root: h.root, steps: steps}
}
