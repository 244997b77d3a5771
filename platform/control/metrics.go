package control

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// metrics are the Hook's instruments. In-flight, queued and capacity are observed at
// collection time from the Hook's own counts, so the hot path pays nothing for them.
type metrics struct {
	errors  metric.Int64Counter
	service attribute.KeyValue
}

func newMetrics(mp metric.MeterProvider, h *Hook) metrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("boxoffice.dev/platform/control")
	svc := attribute.String("service", h.service)
	// Instrument errors only come from invalid names or units, fixed here: the SDK then
	// returns a working no-op instrument, so they are safe to ignore.
	errs, _ := m.Int64Counter("boxoffice.control.injected_errors",
		metric.WithDescription("Requests answered 503 by an injected error or outage."),
		metric.WithUnit("{request}"))
	inFlight, _ := m.Int64ObservableGauge("boxoffice.control.in_flight",
		metric.WithDescription("Requests holding a service slot."), metric.WithUnit("{request}"))
	queued, _ := m.Int64ObservableGauge("boxoffice.control.queued",
		metric.WithDescription("Requests waiting for a service slot."), metric.WithUnit("{request}"))
	capacity, _ := m.Int64ObservableGauge("boxoffice.control.max_concurrent",
		metric.WithDescription("Service slots; 0 means unlimited."), metric.WithUnit("{request}"))
	_, _ = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		n, q := h.slots.counts()
		set := metric.WithAttributes(svc)
		o.ObserveInt64(inFlight, int64(n), set)
		o.ObserveInt64(queued, int64(q), set)
		o.ObserveInt64(capacity, int64(h.Knobs().MaxConcurrent), set)
		return nil
	}, inFlight, queued, capacity)
	return metrics{errors: errs, service: svc}
}

// injected counts one injected failure of kind "error_rate" or "outage".
func (m metrics) injected(ctx context.Context, kind string) {
	m.errors.Add(ctx, 1, metric.WithAttributes(m.service, attribute.String("kind", kind)))
}
