package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// spanContext returns a context holding a valid remote span, as an incoming traceparent would.
func spanContext(t *testing.T) (context.Context, trace.SpanContext) {
	t.Helper()
	tid, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex("00f067aa0ba902b7")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc), sc
}

// lines decodes the JSON lines written to buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("decode log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestNewTraceIDs(t *testing.T) {
	spanCtx, sc := spanContext(t)
	tests := []struct {
		name     string
		ctx      context.Context
		log      func(l *slog.Logger, ctx context.Context)
		wantIDs  bool   // trace_id and span_id present at the top level
		wantAttr string // a record attribute that must survive, as group.key
	}{
		{
			name:    "span",
			ctx:     spanCtx,
			log:     func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "hello", "k", "v") },
			wantIDs: true, wantAttr: "k",
		},
		{
			name:     "no span",
			ctx:      context.Background(),
			log:      func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "hello", "k", "v") },
			wantAttr: "k",
		},
		{
			name: "span inside a group stays top level",
			ctx:  spanCtx,
			log: func(l *slog.Logger, ctx context.Context) {
				l.With("a", 1).WithGroup("db").With("table", "holds").InfoContext(ctx, "hello", "k", "v")
			},
			wantIDs: true, wantAttr: "db.k",
		},
		{
			name:    "attrs without a group",
			ctx:     spanCtx,
			log:     func(l *slog.Logger, ctx context.Context) { l.With("a", 1).InfoContext(ctx, "hello", "k", "v") },
			wantIDs: true, wantAttr: "a",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(New(&buf, slog.LevelInfo, "order"), tc.ctx)
			got := lines(t, &buf)
			if len(got) != 1 {
				t.Fatalf("wrote %d lines, want 1: %s", len(got), buf.String())
			}
			rec := got[0]
			if rec["service"] != "order" {
				t.Errorf("service = %v, want order", rec["service"])
			}
			if lookup(rec, tc.wantAttr) == nil {
				t.Errorf("attribute %s missing in %s", tc.wantAttr, buf.String())
			}
			if !tc.wantIDs {
				if _, ok := rec["trace_id"]; ok {
					t.Errorf("trace_id = %v, want none", rec["trace_id"])
				}
				if _, ok := rec["span_id"]; ok {
					t.Errorf("span_id = %v, want none", rec["span_id"])
				}
				return
			}
			if got, want := rec["trace_id"], sc.TraceID().String(); got != want {
				t.Errorf("trace_id = %v, want %s (line %s)", got, want, buf.String())
			}
			if got, want := rec["span_id"], sc.SpanID().String(); got != want {
				t.Errorf("span_id = %v, want %s", got, want)
			}
		})
	}
}

// lookup finds a dotted key (group.key) in a decoded line; nil when absent.
func lookup(rec map[string]any, key string) any {
	var cur any = rec
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// TestNewSiblingLoggers guards the copy in with: two loggers derived from one parent must not
// write each other's groups.
func TestNewSiblingLoggers(t *testing.T) {
	ctx, _ := spanContext(t)
	var buf bytes.Buffer
	parent := New(&buf, slog.LevelInfo, "order").WithGroup("g")
	parent.WithGroup("a").InfoContext(ctx, "one", "k", 1)
	parent.WithGroup("b").InfoContext(ctx, "two", "k", 2)
	got := lines(t, &buf)
	if len(got) != 2 {
		t.Fatalf("wrote %d lines, want 2", len(got))
	}
	if v := lookup(got[0], "g.a.k"); v != float64(1) {
		t.Errorf("first line g.a.k = %v, want 1 (%s)", v, buf.String())
	}
	if v := lookup(got[1], "g.b.k"); v != float64(2) {
		t.Errorf("second line g.b.k = %v, want 2 (%s)", v, buf.String())
	}
}

func TestNewLevel(t *testing.T) {
	tests := []struct {
		name  string
		level slog.Level
		want  []string // messages written, in order
	}{
		{"debug", slog.LevelDebug, []string{"d", "i", "w", "e"}},
		{"info", slog.LevelInfo, []string{"i", "w", "e"}},
		{"warn", slog.LevelWarn, []string{"w", "e"}},
		{"error", slog.LevelError, []string{"e"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := New(&buf, tc.level, "catalog")
			ctx := context.Background()
			l.DebugContext(ctx, "d")
			l.InfoContext(ctx, "i")
			l.WarnContext(ctx, "w")
			l.ErrorContext(ctx, "e")
			var got []string
			for _, rec := range lines(t, &buf) {
				got = append(got, rec["msg"].(string))
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("New(level %v) wrote %v, want %v", tc.level, got, tc.want)
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"debug", slog.LevelDebug, false},
		{"info", slog.LevelInfo, false},
		{"warn", slog.LevelWarn, false},
		{"error", slog.LevelError, false},
		{"DEBUG", slog.LevelDebug, false},
		{"Warn", slog.LevelWarn, false},
		{" info ", slog.LevelInfo, false},
		{"warning", 0, true},
		{"", 0, true},
		{"trace", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseLevel(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseLevel(%q) = %v, want an error", tc.in, got)
				}
				for _, name := range []string{"debug", "info", "warn", "error"} {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("ParseLevel(%q) error %q does not name %s", tc.in, err, name)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseLevel(%q) = %v, %v, want %v, nil", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestDiscard(t *testing.T) {
	l := Discard()
	if l.Enabled(context.Background(), slog.LevelError) {
		t.Errorf("Discard().Enabled(error) = true, want false")
	}
}
