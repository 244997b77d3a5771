package control

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/problem"
)

// Path is where a service mounts Handler. Requests to it, and to /healthz, /readyz and
// /metrics, pass Middleware untouched.
const Path = "/control"

// Options are a Hook's optional dependencies; the zero value uses the defaults.
type Options struct {
	// Rand returns a number in [0, 1) for the error-rate draw; nil means math/rand/v2's
	// Float64. It is called from concurrent requests.
	Rand func() float64
	// Sleep waits d or until ctx ends, returning ctx's error then; nil means a timer.
	// Tests replace it to hold requests in their slots for as long as they need.
	Sleep func(ctx context.Context, d time.Duration) error
	// MeterProvider receives the in-flight, queued and injected-error metrics; nil means none.
	MeterProvider metric.MeterProvider
	// Log records knob changes; nil discards them.
	Log *slog.Logger
}

// Hook applies the current Knobs to a service's requests. It is safe for concurrent use;
// Set takes effect for requests that arrive afterwards, and a capacity change also applies
// to requests already queued.
type Hook struct {
	service string
	rand    func() float64
	sleep   func(context.Context, time.Duration) error
	log     *slog.Logger
	metrics metrics

	knobs atomic.Pointer[Knobs]
	slots slots
}

// New returns a Hook for service with healthy knobs. opts, at most one, overrides the
// defaults.
func New(service string, opts ...Options) *Hook {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Sleep == nil {
		o.Sleep = clock.Sleep
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := &Hook{service: service, rand: o.Rand, sleep: o.Sleep, log: o.Log.With("service", service)}
	h.knobs.Store(&Knobs{})
	h.metrics = newMetrics(o.MeterProvider, h)
	return h
}

// Knobs returns the knobs in force.
func (h *Hook) Knobs() Knobs { return *h.knobs.Load() }

// Set validates k and puts it in force.
func (h *Hook) Set(k Knobs) error {
	if err := k.Validate(); err != nil {
		return err
	}
	h.knobs.Store(&k)
	h.slots.setLimit(k.MaxConcurrent)
	return nil
}

// InFlight is the number of requests holding a slot (in service) right now.
func (h *Hook) InFlight() int {
	n, _ := h.slots.counts()
	return n
}

// Queued is the number of requests waiting for a slot right now.
func (h *Hook) Queued() int {
	_, n := h.slots.counts()
	return n
}

// Middleware applies the knobs to every request but the exempt paths. A faulted request
// is answered 503 with a problem+json body and Retry-After: 1.
func (h *Hook) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		release, err := h.admit(r.Context())
		if err != nil {
			problem.Write(w, r, nil, err)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// UnaryServerInterceptor applies the knobs to unary gRPC calls but the health service's.
// A faulted call fails with codes.Unavailable; one whose caller gave up while queued
// fails with the caller's cancellation or deadline.
func (h *Hook) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, "/grpc.health.v1.Health/") {
			return handler(ctx, req)
		}
		release, err := h.admit(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, status.FromContextError(ctx.Err()).Err()
			}
			return nil, problem.GRPC(err)
		}
		defer release()
		return handler(ctx, req)
	}
}

// admit runs one request through the knobs: an outage fails it at once; otherwise it waits
// the injected latency, may draw an injected error, then waits in line for a slot and does
// its simulated work there. Injected errors take no slot: they model a backend refusing
// work, which costs the caller time but uses no capacity. The caller runs the real handler
// while still holding the slot and calls release after.
func (h *Hook) admit(ctx context.Context) (release func(), err error) {
	k := h.knobs.Load()
	if k.Outage {
		h.metrics.injected(ctx, "outage")
		return nil, problem.New(problem.Unavailable, "%s is down (injected outage)", h.service)
	}
	if k.Latency > 0 {
		if err := h.sleep(ctx, k.Latency); err != nil {
			return nil, gaveUp(h.service, err)
		}
	}
	if k.ErrorRate > 0 && h.rand() < k.ErrorRate {
		h.metrics.injected(ctx, "error_rate")
		return nil, problem.New(problem.Unavailable, "%s failed the request (injected error)", h.service)
	}
	if err := h.slots.acquire(ctx); err != nil {
		return nil, gaveUp(h.service, err)
	}
	if k.ServiceTime > 0 {
		if err := h.sleep(ctx, k.ServiceTime); err != nil {
			h.slots.release()
			return nil, gaveUp(h.service, err)
		}
	}
	return h.slots.release, nil
}

func gaveUp(service string, err error) error {
	return &problem.Error{Code: problem.Unavailable, Message: service + " is over capacity: the request gave up waiting", Err: err}
}

func exempt(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", Path:
		return true
	}
	return strings.HasPrefix(path, Path+"/")
}
