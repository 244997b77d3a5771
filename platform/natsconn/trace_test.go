package natsconn_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/testkit"
)

// useTraceContext installs the W3C propagator for one test and restores the previous one.
func useTraceContext(t *testing.T) {
	t.Helper()
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
}

func TestTraceRoundTripsThroughHeaders(t *testing.T) {
	useTraceContext(t)
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	want := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), want)

	h := nats.Header{}
	natsconn.InjectTrace(ctx, h)
	if got, wantTP := h.Get("traceparent"), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; got != wantTP {
		t.Fatalf("traceparent header = %q, want %q", got, wantTP)
	}

	// Through a real server: what the consumer sees is what the producer sent.
	srv := testkit.StartNATS(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("boxoffice.test.trace")
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: "boxoffice.test.trace", Header: h}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("next message: %v", err)
	}
	got := trace.SpanContextFromContext(natsconn.ExtractTrace(context.Background(), msg.Header))
	if !got.Equal(want) {
		t.Errorf("ExtractTrace(received headers) = %v, want %v", got, want)
	}
}

func TestExtractTraceWithoutHeaders(t *testing.T) {
	useTraceContext(t)
	tests := []struct {
		name string
		h    nats.Header
	}{
		{name: "nil header", h: nil},
		{name: "no trace fields", h: nats.Header{"Nats-Msg-Id": {"x"}}},
		{name: "malformed traceparent", h: nats.Header{"traceparent": {"not-a-trace"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := trace.SpanContextFromContext(natsconn.ExtractTrace(context.Background(), tt.h))
			if got.IsValid() {
				t.Errorf("ExtractTrace(%v) = %v, want no span context", tt.h, got)
			}
		})
	}
}
