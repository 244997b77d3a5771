package natsconn

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// InjectTrace writes the trace context of ctx (W3C traceparent, baggage — whatever the
// global propagator carries) into h, so a consumer continues the producer's trace.
// h must be non-nil.
func InjectTrace(ctx context.Context, h nats.Header) {
	otel.GetTextMapPropagator().Inject(ctx, headerCarrier(h))
}

// ExtractTrace returns ctx extended with the trace context found in h. A nil h or one
// without trace fields returns ctx unchanged.
func ExtractTrace(ctx context.Context, h nats.Header) context.Context {
	return otel.GetTextMapPropagator().Extract(ctx, headerCarrier(h))
}

// headerCarrier lets the propagator read and write NATS headers. nats.Header is
// case-sensitive, unlike HTTP headers, so keys are used exactly as the propagator names them.
type headerCarrier nats.Header

var _ propagation.TextMapCarrier = headerCarrier(nil)

func (c headerCarrier) Get(key string) string { return nats.Header(c).Get(key) }

func (c headerCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
