package upstream

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// metrics are what the upstream layer reports: RED per service and instance, and the reasons
// a request did not reach an instance. The series and their labels: docs/run.md, "Metrics".
type metrics struct {
	requests    metric.Int64Counter
	duration    metric.Float64Histogram
	shed        metric.Int64Counter
	unavailable metric.Int64Counter
	retries     metric.Int64Counter
	ejections   metric.Int64Counter
	panicRouted metric.Int64Counter
}

// outcomes are the values of upstream_requests_total's outcome label.
var outcomes = []string{"1xx", "2xx", "3xx", "4xx", "5xx", "timeout", "connect_error", "error", "canceled", "aborted", outcomeClientBody}

// retryOutcomes are the values of upstream_retries_total's outcome label.
var retryOutcomes = []string{"sent", "budget_exhausted", "no_other_instance"}

// newMetrics creates the instruments on mp; nil means no metrics. At each collection,
// observe is called with every instance of every service, and panics and limits with every
// service.
func newMetrics(mp metric.MeterProvider, observe func(func(in *instance, routable bool)), panics func(func(pl *pool, panicking bool)), limits func(func(pl *pool, limit int))) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("boxoffice.dev/gateway/upstream")
	var ms metrics
	var err, e error
	ms.requests, e = m.Int64Counter("upstream.requests", metric.WithDescription("Attempts sent to upstream instances, by outcome."))
	err = errors.Join(err, e)
	ms.duration, e = m.Float64Histogram("upstream.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of one attempt, from sending the request to the end of the response body."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	err = errors.Join(err, e)
	ms.shed, e = m.Int64Counter("upstream.shed", metric.WithDescription("Requests answered 503 because the service was at its concurrency limit."))
	err = errors.Join(err, e)
	ms.unavailable, e = m.Int64Counter("upstream.unavailable", metric.WithDescription("Requests answered 503 because no instance was ready."))
	err = errors.Join(err, e)
	ms.retries, e = m.Int64Counter("upstream.retries", metric.WithDescription("Retries sent, or not sent and why."))
	err = errors.Join(err, e)
	ms.ejections, e = m.Int64Counter("upstream.ejections", metric.WithDescription("Instances ejected after consecutive failed requests."))
	err = errors.Join(err, e)
	ms.panicRouted, e = m.Int64Counter("upstream.panic.routed", metric.WithDescription("Attempts sent to an instance whose probes time out, because its service was in panic."))
	err = errors.Join(err, e)
	_, e = m.Int64ObservableGauge("upstream.panic", metric.WithDescription("1 while a service has too few ready instances and also uses those whose probes time out."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			panics(func(pl *pool, panicking bool) { o.Observe(oneIf(panicking), pl.attrs) })
			return nil
		}))
	err = errors.Join(err, e)
	_, e = m.Int64ObservableGauge("upstream.concurrency_limit", metric.WithDescription("The concurrency limit in force for a service, fixed or adaptive; 0 = unlimited."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			limits(func(pl *pool, limit int) { o.Observe(int64(limit), pl.attrs) })
			return nil
		}))
	err = errors.Join(err, e)
	_, e = m.Int64ObservableGauge("upstream.in_flight", metric.WithDescription("Requests in flight to an instance."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			observe(func(in *instance, _ bool) { o.Observe(in.inFlight.Load(), in.attrs) })
			return nil
		}))
	err = errors.Join(err, e)
	_, e = m.Int64ObservableGauge("upstream.routable", metric.WithDescription("1 when an instance is ready and not ejected."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			observe(func(in *instance, routable bool) { o.Observe(oneIf(routable), in.attrs) })
			return nil
		}))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("upstream metrics: %w", err)
	}
	return &ms, nil
}

// observe calls f with every instance of every service, for the gauges.
func (p *Pools) observe(f func(in *instance, routable bool)) {
	now := p.now().UnixNano()
	for _, pl := range *p.pools.Load() {
		for _, in := range *pl.instances.Load() {
			f(in, in.routable(now))
		}
	}
}

// panics calls f with every service and whether it is in panic now, for the gauge.
func (p *Pools) panics(f func(pl *pool, panicking bool)) {
	now := p.now()
	for _, pl := range *p.pools.Load() {
		f(pl, p.evaluatePanic(pl, now))
	}
}

// limits calls f with every service and its concurrency limit in force, for the gauge.
func (p *Pools) limits(f func(pl *pool, limit int)) {
	for _, pl := range *p.pools.Load() {
		limit, _ := pl.concurrencyLimit(pl.cfg.Load())
		f(pl, limit)
	}
}

func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// poolAttrs builds a service's attribute sets once, so that counting allocates nothing.
func poolAttrs(service string) (metric.MeasurementOption, map[string]metric.MeasurementOption) {
	svc := attribute.String("service", service)
	retries := make(map[string]metric.MeasurementOption, len(retryOutcomes))
	for _, o := range retryOutcomes {
		retries[o] = metric.WithAttributeSet(attribute.NewSet(svc, attribute.String("outcome", o)))
	}
	return metric.WithAttributeSet(attribute.NewSet(svc)), retries
}

// instanceAttrs builds an instance's attribute sets once.
func instanceAttrs(service, instance string) (metric.MeasurementOption, map[string]metric.MeasurementOption) {
	svc, inst := attribute.String("service", service), attribute.String("instance", instance)
	byOutcome := make(map[string]metric.MeasurementOption, len(outcomes))
	for _, o := range outcomes {
		byOutcome[o] = metric.WithAttributeSet(attribute.NewSet(svc, inst, attribute.String("outcome", o)))
	}
	return metric.WithAttributeSet(attribute.NewSet(svc, inst)), byOutcome
}

// statusClass is the outcome label of a response status.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "error"
	}
	return outcomes[status/100-1]
}
