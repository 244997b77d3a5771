package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// metrics are what Failsafe reports, and Leases with path lease; Redis adds its batch sizes
// (newBatchSizes). The series and their labels: docs/run.md, "Metrics".
type metrics struct {
	decisions  *decisionCounter
	storeErrs  metric.Int64Counter
	fallbacks  metric.Int64Counter
	failClosed metric.Int64Counter
	charged    metric.Int64Counter
	latency    metric.Float64Histogram
	usage      *usage
	queueDelay metric.Float64Histogram
}

// decisionCounter is ratelimit_decisions_total, the series Failsafe and Leases share.
type decisionCounter struct {
	counter metric.Int64Counter
	// outcomes holds the attributes of each rule, outcome and path, made on first use: a
	// set of attributes is sorted and copied when made, which at every decision cost more
	// than the counting itself. One entry per rule of the policy, outcome and path; a slice,
	// so that Add does not allocate one for its variadic options at every call.
	outcomes sync.Map // outcomeKey → []metric.AddOption
}

func newDecisionCounter(m metric.Meter) (*decisionCounter, error) {
	c, err := m.Int64Counter("ratelimit.decisions", metric.WithDescription("Rule decisions by rule, outcome and path."))
	if err != nil {
		return nil, err
	}
	return &decisionCounter{counter: c}, nil
}

// add counts one decision of the series k.
func (c *decisionCounter) add(ctx context.Context, k outcomeKey) {
	o, ok := c.outcomes.Load(k)
	if !ok {
		o = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("rule", k.rule),
			attribute.String("outcome", k.outcome), attribute.String("path", string(k.path))))}
		c.outcomes.Store(k, o)
	}
	c.counter.Add(ctx, 1, o.([]metric.AddOption)...)
}

// outcomeKey names one series of ratelimit_decisions_total.
type outcomeKey struct {
	rule, outcome string
	path          Path
}

// NearLimitRatio is the share of a key's budget past which an allowed decision counts as near
// its limit: the default of Envoy's ratelimit (NEAR_LIMIT_RATIO), where near_limit too counts
// only requests that passed. A denied one is counted as denied, not as near.
const NearLimitRatio = 0.8

// usage is ratelimit_utilization and ratelimit_near_limit_decisions_total: how full a key's
// budget was at each decision, per rule. Labelled by rule only, never by key, whose values
// are unbounded; which keys run hot is another question (docs/lessons/hot-keys.md).
type usage struct {
	near metric.Int64Counter
	full metric.Float64Histogram
	// rules holds each rule's attributes, made on first use as decisionCounter's are; kept as
	// option slices so that recording passes them on without building one per decision.
	rules sync.Map // rule ID → ruleOptions
}

type ruleOptions struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func newUsage(m metric.Meter) (*usage, error) {
	near, err := m.Int64Counter("ratelimit.near_limit.decisions",
		metric.WithDescription("Allowed rule decisions that left the key's budget more than 80 % spent."))
	if err != nil {
		return nil, err
	}
	full, err := m.Float64Histogram("ratelimit.utilization",
		metric.WithDescription("Share of the key's budget spent after each rule decision: 0 untouched, 1 exhausted."),
		metric.WithExplicitBucketBoundaries(0.1, 0.25, 0.5, 0.75, NearLimitRatio, 0.9, 0.95, 0.99))
	if err != nil {
		return nil, err
	}
	return &usage{near: near, full: full}, nil
}

// record counts one decided rule: its utilization, and whether it passed near the limit.
func (u *usage) record(ctx context.Context, d Decision) {
	if d.Limit <= 0 {
		return
	}
	o, ok := u.rules.Load(d.Rule)
	if !ok {
		set := metric.WithAttributeSet(attribute.NewSet(attribute.String("rule", d.Rule)))
		o = ruleOptions{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
		u.rules.Store(d.Rule, o)
	}
	opts := o.(ruleOptions)
	used := Utilization(d)
	u.full.Record(ctx, used, opts.record...)
	if d.Allowed && used > NearLimitRatio {
		u.near.Add(ctx, 1, opts.add...)
	}
}

// Utilization is the share of d's budget spent once d is decided, from 0 (untouched) to 1
// (exhausted, or overdrawn by a charge); 0 for a decision without a limit.
func Utilization(d Decision) float64 {
	if d.Limit <= 0 {
		return 0
	}
	return min(max(float64(d.Limit-d.Remaining)/float64(d.Limit), 0), 1)
}

// meterName is the instrumentation scope of the package's metrics.
const meterName = "boxoffice.dev/gateway/ratelimit"

// newMetrics creates the instruments on mp; nil means no metrics. breakers, the state of
// each lane's breaker, is observed at each collection.
func newMetrics(mp metric.MeterProvider, breakers func() map[string]BreakerState) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(meterName)
	var ms metrics
	var err, e error
	ms.decisions, e = newDecisionCounter(m)
	err = errors.Join(err, e)
	ms.usage, e = newUsage(m)
	err = errors.Join(err, e)
	ms.storeErrs, e = m.Int64Counter("ratelimit.store.errors", metric.WithDescription("Failed or skipped store calls by kind."))
	err = errors.Join(err, e)
	ms.fallbacks, e = m.Int64Counter("ratelimit.fallback.decisions", metric.WithDescription("Rule decisions made by the local fallback limiter."))
	err = errors.Join(err, e)
	ms.failClosed, e = m.Int64Counter("ratelimit.fail_closed.decisions", metric.WithDescription("Rule decisions denied because the store was unavailable."))
	err = errors.Join(err, e)
	ms.latency, e = m.Float64Histogram("ratelimit.decision.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to decide one request, all rules included."),
		metric.WithExplicitBucketBoundaries(0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1))
	err = errors.Join(err, e)
	ms.queueDelay, e = m.Float64Histogram("ratelimit.queue.delay", metric.WithUnit("s"),
		metric.WithDescription("Wait given to requests that a shaping rule queued, by rule."),
		metric.WithExplicitBucketBoundaries(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10))
	err = errors.Join(err, e)
	ms.charged, e = m.Int64Counter("ratelimit.chargeback.units", metric.WithDescription("Units the fallback spent, charged back to the store once it answered again."))
	err = errors.Join(err, e)
	_, e = m.Int64ObservableGauge("ratelimit.breaker.open", metric.WithDescription("1 while the lane's circuit breaker skips the store."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			for lane, st := range breakers() {
				open := int64(0)
				if st == Open {
					open = 1
				}
				o.Observe(open, metric.WithAttributes(attribute.String("lane", lane)))
			}
			return nil
		}))
	err = errors.Join(err, e)
	_, e = m.Int64ObservableGauge("ratelimit.breaker.state", metric.WithDescription("The lane's circuit breaker: 0 closed, 1 open, 2 half-open."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			for lane, st := range breakers() {
				o.Observe(int64(st), metric.WithAttributes(attribute.String("lane", lane)))
			}
			return nil
		}))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("ratelimit metrics: %w", err)
	}
	return &ms, nil
}

// outcomeOf is d's outcome label: allowed, denied, shadow_denied or unenforced_denied.
func outcomeOf(d Decision) string {
	switch {
	case d.Allowed:
		return "allowed"
	case d.Unenforced:
		return "unenforced_denied"
	case d.Mode == Shadow:
		return "shadow_denied"
	}
	return "denied"
}

// decided records one request's decisions and how long they took.
func (m *metrics) decided(ctx context.Context, res Result, took time.Duration) {
	for _, d := range res.Rules {
		if d.skipped {
			continue
		}
		outcome := outcomeOf(d)
		if outcome == "allowed" && d.Delay > 0 && res.Allowed && d.Mode != Shadow { // a shadow queue delays nothing
			outcome = "delayed"
			m.queueDelay.Record(ctx, d.Delay.Seconds(), metric.WithAttributes(attribute.String("rule", d.Rule)))
		}
		m.decisions.add(ctx, outcomeKey{d.Rule, outcome, d.Path})
		m.usage.record(ctx, d)
		switch d.Path {
		case PathFallback:
			m.fallbacks.Add(ctx, 1, metric.WithAttributes(attribute.String("rule", d.Rule)))
		case PathFailClosed:
			m.failClosed.Add(ctx, 1, metric.WithAttributes(attribute.String("rule", d.Rule)))
		}
	}
	m.latency.Record(ctx, took.Seconds())
}

// storeError records a store call of a lane that failed or was skipped.
func (m *metrics) storeError(ctx context.Context, lane, kind string) {
	m.storeErrs.Add(ctx, 1, metric.WithAttributes(attribute.String("lane", lane), attribute.String("kind", kind)))
}

// chargedBack records debts charged back to the store.
func (m *metrics) chargedBack(ctx context.Context, debts []Request) {
	for _, q := range debts {
		m.charged.Add(ctx, int64(q.Cost), metric.WithAttributes(attribute.String("rule", q.Rule.ID)))
	}
}

// newBatchSizes creates the histogram of requests per Redis round trip on mp; nil means no
// metrics. A request alone is a batch of 1; at most maxBatch ride together.
func newBatchSizes(mp metric.MeterProvider) (metric.Int64Histogram, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	h, err := mp.Meter(meterName).Int64Histogram("ratelimit.redis.batch.size",
		metric.WithDescription("Requests decided per Redis round trip: 1 when a request goes alone, more when concurrent requests share a pipeline."),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128))
	if err != nil {
		return nil, fmt.Errorf("ratelimit metrics: %w", err)
	}
	return h, nil
}
