package notification

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// observeTimeout bounds the look-up of one consumer when the gauge is read.
const observeTimeout = 2 * time.Second

// observeRedelivered registers the gauge boxoffice.notification.events_redelivered: per
// source's consumer, the events delivered more than once and not acknowledged yet (mostly in
// back-off after failed store writes). It is read from the server, so every instance reports
// the same value: aggregate with max, not sum. A consumer not there yet is left out.
// Unregister it when done.
func observeRedelivered(mp metric.MeterProvider, js jetstream.JetStream, sources []Source) (metric.Registration, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	meter := mp.Meter("boxoffice.dev/services/notification")
	gauge, err := meter.Int64ObservableGauge("boxoffice.notification.events_redelivered",
		metric.WithDescription("Events delivered more than once and not yet stored (in back-off after failed store writes), by consumer; every instance reports the whole consumer."),
		metric.WithUnit("{event}"))
	if err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for _, src := range sources {
			cctx, cancel := context.WithTimeout(ctx, observeTimeout)
			cons, err := js.Consumer(cctx, src.Stream, src.Durable)
			cancel()
			if err != nil {
				continue // not created yet, or NATS away: no value rather than a wrong one
			}
			o.ObserveInt64(gauge, int64(cons.CachedInfo().NumRedelivered), metric.WithAttributes(attribute.String("consumer", src.Durable)))
		}
		return nil
	}, gauge)
}
