package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/metric"
)

// Failsafe is the Limiter a gateway uses: it decides on the shared store and keeps deciding,
// without an error, when the store is slow or down.
//
// Each store call gets a short timeout (5 ms by default: a slow limiter is worse than none)
// and goes through a circuit breaker, so a dead store costs no waiting once the breaker is
// open. While the store is unavailable each rule follows its OnStoreFailure:
//
//   - FailOpen rules decide on a local in-memory limiter at Limit/N and Burst/N, N being the
//     live gateway replicas (last known), so the replicas together keep roughly the global
//     limit. A short period of approximate limits is rarely worse than an outage.
//   - FailClosed rules deny (the gateway answers 503): for login or OTP, guessing freely
//     while the limiter is blind is worse than a short refusal.
//
// Give the Redis client ContextTimeoutEnabled: its calls then end at the deadline by
// themselves and Failsafe makes them directly. Otherwise each call runs on a goroutine of its
// own so that the timeout holds anyway, at some cost per decision (see docs/benchmarks.md).
// A store call abandoned at the timeout may still complete in Redis; that request is then
// counted by both the store and the fallback, erring on the side of limiting.
//
// Failsafe records metrics for every decision (see metrics). Safe for concurrent use.
type Failsafe struct {
	store    Limiter
	local    *Memory
	replicas ReplicaCount
	timeout  time.Duration
	openFor  time.Duration
	direct   bool // the store ends its calls at the deadline by itself
	breaker  *gobreaker.CircuitBreaker[Result]
	metrics  *metrics
	now      func() time.Time
}

// deadlineBound is a store that can tell whether its calls end at their context's deadline.
type deadlineBound interface{ boundByDeadline() bool }

var _ deadlineBound = (*Redis)(nil)

// ReplicaCount tells how many gateway replicas share the limits; *Replicas is one.
type ReplicaCount interface{ Count() int }

var _ ReplicaCount = (*Replicas)(nil)

// FailsafeOptions configures a Failsafe; the zero value gives the defaults.
type FailsafeOptions struct {
	// Timeout bounds each store call; 0 means 5ms.
	Timeout time.Duration
	// Breaker configures the circuit breaker around the store.
	Breaker Breaker
	// Replicas gives N for the fallback's Limit/N; nil means N = 1.
	Replicas ReplicaCount
	// Now is the clock for latency metrics and the fallback limiter; nil means time.Now.
	Now func() time.Time
	// Meter receives the metrics; nil means none.
	Meter metric.MeterProvider
	// Logger reports breaker state changes; nil discards.
	Logger *slog.Logger
}

// NewFailsafe wraps store, usually a *Redis.
func NewFailsafe(store Limiter, opts FailsafeOptions) (*Failsafe, error) {
	f := &Failsafe{store: store, replicas: opts.Replicas, timeout: opts.Timeout, openFor: opts.Breaker.openFor(), now: opts.Now}
	if d, ok := store.(deadlineBound); ok {
		f.direct = d.boundByDeadline()
	}
	if f.timeout <= 0 {
		f.timeout = 5 * time.Millisecond
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.replicas == nil {
		f.replicas = oneReplica{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f.local = NewMemory(f.now)
	f.breaker = newBreaker(opts.Breaker, log)
	var err error
	if f.metrics, err = newMetrics(opts.Meter, f.BreakerOpen); err != nil {
		return nil, err
	}
	return f, nil
}

var _ Limiter = (*Failsafe)(nil)

// Allow decides reqs on the store or, if it fails, by each rule's OnStoreFailure. It returns
// an error only for invalid requests.
func (f *Failsafe) Allow(ctx context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	start := f.now()
	res, err := f.breaker.Execute(func() (Result, error) { return f.ask(ctx, reqs) })
	if err != nil {
		f.metrics.storeError(ctx, errorKind(err))
		res = f.degrade(reqs)
	}
	f.metrics.decided(ctx, res, f.now().Sub(start))
	return res, nil
}

// Release frees concurrency leases where they were taken. A lease the store cannot release
// now expires by itself after its rule's Window.
func (f *Failsafe) Release(ctx context.Context, leases ...Lease) error {
	var stored []Lease
	for _, l := range leases {
		if l.local {
			_ = f.local.Release(ctx, l)
		} else {
			stored = append(stored, l)
		}
	}
	if len(stored) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if err := f.store.Release(ctx, stored...); err != nil {
		f.metrics.storeError(ctx, errorKind(err))
		return err
	}
	return nil
}

// BreakerOpen reports whether store calls are being skipped.
func (f *Failsafe) BreakerOpen() bool { return f.breaker.State() == gobreaker.StateOpen }

// ask calls the store within the timeout: directly if the store ends its calls at the
// deadline, else on a goroutine of its own so the timeout holds even if the client ignores
// context deadlines on its sockets.
func (f *Failsafe) ask(ctx context.Context, reqs []Request) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if f.direct {
		res, err := f.store.Allow(ctx, reqs)
		if err != nil {
			return Result{}, fmt.Errorf("ratelimit: store: %w", err)
		}
		return res, nil
	}
	type answer struct {
		res Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := f.store.Allow(ctx, reqs)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return Result{}, fmt.Errorf("ratelimit: store: %w", ctx.Err())
	}
}

// degrade decides without the store: fail-closed rules deny, the others decide locally at
// their share of the limit. If an enforced rule fails closed the local limiter only reports.
func (f *Failsafe) degrade(reqs []Request) Result {
	n := max(1, f.replicas.Count())
	ds := make([]Decision, len(reqs))
	closed := false
	var local []Request
	var at []int
	for i, q := range reqs {
		if q.Rule.OnStoreFailure == FailClosed {
			ds[i] = Decision{RetryAfter: f.openFor, Limit: q.Rule.Limit, Window: q.Rule.Window,
				Rule: q.Rule.ID, Mode: q.Rule.mode(), Path: PathFailClosed}
			closed = closed || q.Rule.enforced()
			continue
		}
		local = append(local, share(q, n))
		at = append(at, i)
	}
	if len(local) > 0 {
		for j, d := range f.local.decide(local, !closed, PathFallback).Rules {
			ds[at[j]] = d
		}
	}
	return combine(ds)
}

// share is a request against this replica's share of its rule: Limit/N and Burst/N.
func share(q Request, n int) Request {
	q.Rule.Limit = max(1, q.Rule.Limit/n)
	if q.Rule.Burst > 0 {
		q.Rule.Burst = max(1, q.Rule.Burst/n)
	}
	return q
}

// errorKind names a store failure for metrics.
func errorKind(err error) string {
	switch {
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return "breaker_open"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

// oneReplica is the replica count of a gateway that runs alone.
type oneReplica struct{}

func (oneReplica) Count() int { return 1 }
