package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestFailsafeSurvivesRedisCrash stops redis-server mid-test: fail-open rules keep deciding
// through the fallback at limit/N with no error and within the timeout, fail-closed rules
// deny, the breaker opens, and decisions return to Redis soon after it restarts.
func TestFailsafeSurvivesRedisCrash(t *testing.T) {
	for _, tt := range []struct {
		name      string
		deadlines bool
	}{
		{"client ignores deadlines: calls on their own goroutine", false},
		{"client honours deadlines: direct calls", true},
	} {
		t.Run(tt.name, func(t *testing.T) { survivesCrash(t, tt.deadlines) })
	}
}

func survivesCrash(t *testing.T, deadlines bool) {
	srv := testkit.StartRedis(t)
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: deadlines})
	t.Cleanup(func() { _ = client.Close() })
	// Two replicas announce themselves: each one's fallback share is limit/2.
	self := NewReplicas(srv.Client(), "gw-1", time.Minute)
	if _, err := NewReplicas(srv.Client(), "gw-2", time.Minute).Announce(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := self.Announce(ctx); err != nil || n != 2 {
		t.Fatalf("Announce = %d, %v; want 2 replicas", n, err)
	}
	reader := sdkmetric.NewManualReader()
	store := NewRedis(client)
	if store.boundByDeadline() != deadlines {
		t.Fatalf("boundByDeadline() = %v, want %v", store.boundByDeadline(), deadlines)
	}
	f, err := NewFailsafe(store, FailsafeOptions{
		Breaker:  Breaker{Unreachable: 3, OpenFor: 2 * time.Second}, // open throughout the outage below
		Replicas: self,
		Meter:    sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	if err != nil {
		t.Fatal(err)
	}
	api := []Request{{Rule: Rule{ID: "api", Algorithm: TokenBucket, Limit: 40, Window: time.Hour}, Key: "user:1"}}
	login := []Request{{Rule: Rule{ID: "login", Algorithm: FixedWindow, Limit: 100, Window: time.Hour, OnStoreFailure: FailClosed}, Key: "ip:1"}}

	// A first call dials and sends the script's source: warm both up, as a running gateway
	// has, so that the 5 ms timeout meets the path it is meant for even on a loaded machine.
	if _, err := store.Allow(ctx, api); err != nil {
		t.Fatal(err)
	}
	if res := mustAllow(t, f, api); !res.Allowed || res.Path != PathStore {
		t.Fatalf("before the crash: allowed %v path %s, want true store", res.Allowed, res.Path)
	}

	srv.Stop()
	allowed := 0
	for i := range 30 {
		start := time.Now()
		res := mustAllow(t, f, api)
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("decision %d during the outage took %v, want it bounded by the 5ms timeout", i, took)
		}
		if res.Path != PathFallback {
			t.Fatalf("decision %d during the outage: path %s, want fallback", i, res.Path)
		}
		if res.Allowed {
			allowed++
		}
	}
	// The store last said 38 of 40 were left (the warm-up and one decision): this replica's
	// half starts from 19 of its 20, not from a full share.
	if allowed != 19 {
		t.Errorf("fallback allowed %d of 30, want 19 (38 left / 2 replicas)", allowed)
	}
	if res := mustAllow(t, f, login); res.Allowed || res.Path != PathFailClosed {
		t.Errorf("fail-closed rule during the outage: allowed %v path %s, want false fail_closed", res.Allowed, res.Path)
	}
	if !f.BreakerOpen() {
		t.Errorf("BreakerOpen() = false during the outage, want true")
	}
	if n := self.Count(); n != 2 {
		t.Errorf("Count() during the outage = %d, want the last known 2", n)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		metric string
		attrs  []attribute.KeyValue
		atLeast,
		atMost int64
	}{
		{"ratelimit.fallback.decisions", nil, 30, 30},
		{"ratelimit.fail_closed.decisions", nil, 1, 1},
		{"ratelimit.decisions", []attribute.KeyValue{attribute.String("rule", "api"), attribute.String("outcome", "denied")}, 11, 11},
		{"ratelimit.store.errors", []attribute.KeyValue{attribute.String("kind", "breaker_open")}, 1, 31},
		{"ratelimit.breaker.open", nil, 1, 1},
	} {
		if got := sum(rm, c.metric, c.attrs...); got < c.atLeast || got > c.atMost {
			t.Errorf("%s%v = %d, want %d..%d", c.metric, c.attrs, got, c.atLeast, c.atMost)
		}
	}
	if n := histogramCount(rm, "ratelimit.decision.duration"); n < 32 {
		t.Errorf("ratelimit.decision.duration count = %d, want at least 32", n)
	}

	srv.Start()
	testkit.Eventually(t, 5*time.Second, "decisions back on the store", func() bool {
		return mustAllow(t, f, api).Path == PathStore
	})
	if f.BreakerOpen() {
		t.Errorf("BreakerOpen() = true after recovery, want false")
	}
}

// TestFailsafeClosedRuleSpendsNoFallback: when an enforced rule fails closed, the request is
// denied and its fail-open rules spend nothing locally.
func TestFailsafeClosedRuleSpendsNoFallback(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)), MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	f, err := NewFailsafe(NewRedis(down), FailsafeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	open := Request{Rule: Rule{ID: "api", Algorithm: FixedWindow, Limit: 10, Window: time.Hour}, Key: "user:1"}
	closed := Request{Rule: Rule{ID: "otp", Algorithm: FixedWindow, Limit: 10, Window: time.Hour, OnStoreFailure: FailClosed}, Key: "user:1"}
	for range 3 {
		if res := mustAllow(t, f, []Request{open, closed}); res.Allowed {
			t.Fatalf("request with a fail-closed rule while the store is down: allowed, want denied")
		}
	}
	if res := mustAllow(t, f, []Request{open}); res.Remaining != 9 {
		t.Errorf("fallback remaining after 3 denied requests and 1 allowed = %d, want 9", res.Remaining)
	}
}

func TestReplicasCountLiveOnes(t *testing.T) {
	srv := testkit.StartRedis(t)
	ctx := context.Background()
	ttl := 300 * time.Millisecond
	a, b, c := NewReplicas(srv.Client(), "a", ttl), NewReplicas(srv.Client(), "b", ttl), NewReplicas(srv.Client(), "c", ttl)
	for _, r := range []*Replicas{a, b, c} {
		if _, err := r.Announce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := a.Announce(ctx); n != 3 {
		t.Fatalf("Announce with three replicas = %d, want 3", n)
	}
	// b keeps running; c stops renewing (as if it crashed) and drops out after its TTL.
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- b.Run(runCtx) }()
	testkit.Eventually(t, 3*time.Second, "c drops out", func() bool {
		n, _ := a.Announce(ctx)
		return n == 2
	})
	// b shuts down cleanly and withdraws at once.
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if n, _ := a.Announce(ctx); n != 1 {
		t.Errorf("Announce after b left = %d, want 1", n)
	}
}

func mustAllow(t *testing.T, l Limiter, reqs []Request) Result {
	t.Helper()
	res, err := l.Allow(context.Background(), reqs)
	if err != nil {
		t.Fatalf("Allow: %v", err)
	}
	return res
}

// sum adds the int64 data points (of a counter or a gauge) of a metric whose attributes
// include attrs.
func sum(rm metricdata.ResourceMetrics, name string, attrs ...attribute.KeyValue) int64 {
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			}
			if m.Name != name {
				continue
			}
			for _, dp := range points {
				match := true
				for _, a := range attrs {
					if v, ok := dp.Attributes.Value(a.Key); !ok || v != a.Value {
						match = false
					}
				}
				if match {
					total += dp.Value
				}
			}
		}
	}
	return total
}

// gauges reads the float gauge name of rm, its points by their attribute key's value.
func gauges(rm metricdata.ResourceMetrics, name string, key attribute.Key) map[string]float64 {
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && m.Name == name {
				for _, dp := range g.DataPoints {
					v, _ := dp.Attributes.Value(key)
					out[v.AsString()] = dp.Value
				}
			}
		}
	}
	return out
}

func histogramCount(rm metricdata.ResourceMetrics, name string) uint64 {
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, dp := range h.DataPoints {
					n += dp.Count
				}
			}
		}
	}
	return n
}
