package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/testkit"
)

// TestHotKeysNamesTheHotKeyAcrossReplicas: two replicas share a Redis and a load in which one
// key of 10,000 takes half the decisions. After both publish, Top, read on either, names that
// key first with about half of all the decisions both replicas made.
func TestHotKeysNamesTheHotKeyAcrossReplicas(t *testing.T) {
	srv := testkit.StartRedis(t)
	now := time.Date(2026, 12, 2, 10, 0, 1, 0, time.UTC)
	c := clock.Func(func() time.Time { return now })
	var replicas []*HotKeys
	for range 2 {
		h, err := NewHotKeys(NewMemory(c), srv.Client(), HotKeysOptions{Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, h)
	}
	rule := Rule{ID: "api-per-user", Algorithm: TokenBucket, Limit: 1_000_000, Window: time.Second}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 20_000
	hot := 0
	for i := range n {
		key := fmt.Sprintf("user:%d", rng.IntN(10_000))
		if rng.IntN(2) == 0 {
			key, hot = "user:bot", hot+1
		}
		if _, err := replicas[i%2].Allow(ctx, []Request{{Rule: rule, Key: key}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range replicas {
		if err := r.Publish(ctx); err != nil {
			t.Fatalf("Publish = %v", err)
		}
	}
	for i, r := range replicas {
		top, err := r.Top(ctx, 3)
		if err != nil {
			t.Fatalf("Top = %v", err)
		}
		if len(top) != 3 || top[0].Rule != rule.ID || top[0].Key != "user:bot" {
			t.Fatalf("replica %d: Top(3) = %+v; want user:bot of %s first", i, top, rule.ID)
		}
		// Each replica counted user:bot from its first decisions on, so exactly.
		if top[0].Decisions != int64(hot) || top[0].Share < 0.45 || top[0].Share > 0.55 {
			t.Errorf("replica %d: user:bot = %d decisions, share %.3f; want %d, about 0.5", i, top[0].Decisions, top[0].Share, hot)
		}
		if top[1].Share > 0.01 {
			t.Errorf("replica %d: second key %+v has a share over 1%%; the rest of the load is spread over 10,000 keys", i, top[1])
		}
	}
}

// recordingLimiter allows everything and keeps the requests it was asked about.
type recordingLimiter struct {
	mu   sync.Mutex
	seen []Request
}

func (r *recordingLimiter) Allow(_ context.Context, reqs []Request) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, reqs...)
	return Result{Decision: Decision{Allowed: true}}, nil
}

func (r *recordingLimiter) Release(context.Context, ...Lease) error { return nil }

// TestLeaseWhenHotLeasesOnlyHotKeys: a rule with LeaseWhenHot reaches the inner limiter (in
// the gateway, Leases) with its lease only for a key hot at the last publication; a cold key,
// and every key before the first publication, goes without, so it asks the store each time.
func TestLeaseWhenHotLeasesOnlyHotKeys(t *testing.T) {
	inner := &recordingLimiter{}
	reader := sdkmetric.NewManualReader()
	h, err := NewHotKeys(inner, nil, HotKeysOptions{MinHot: 10, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	rule := Rule{ID: "partner", Algorithm: TokenBucket, Limit: 1000, Window: time.Second, Lease: 20, LeaseWhenHot: true}
	ctx := context.Background()
	allow := func(key string) Request {
		t.Helper()
		reqs := []Request{{Rule: rule, Key: key}}
		if _, err := h.Allow(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		if reqs[0].Rule.Lease != 20 {
			t.Fatal("Allow changed the caller's requests")
		}
		return inner.seen[len(inner.seen)-1]
	}
	if q := allow("tenant:big"); q.Rule.Lease != 0 {
		t.Errorf("before any publication, lease = %d; want 0: no key is known hot", q.Rule.Lease)
	}
	for range 99 {
		allow("tenant:big")
	}
	allow("tenant:small")
	if err := h.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if q := allow("tenant:big"); q.Rule.Lease != 20 {
		t.Errorf("hot key: lease = %d, want 20", q.Rule.Lease)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	shares := gauges(rm, "ratelimit.hot_key.share", "key")
	if len(shares) != 1 || shares["tenant:big"] < 0.98 {
		t.Errorf("ratelimit.hot_key.share = %v; want tenant:big alone, at 100 of 101 decisions", shares)
	}
	if q := allow("tenant:small"); q.Rule.Lease != 0 {
		t.Errorf("cold key: lease = %d, want 0", q.Rule.Lease)
	}
	plain := rule
	plain.LeaseWhenHot = false
	if _, err := h.Allow(ctx, []Request{{Rule: plain, Key: "tenant:small"}}); err != nil {
		t.Fatal(err)
	}
	if q := inner.seen[len(inner.seen)-1]; q.Rule.Lease != 20 {
		t.Errorf("a rule without lease_when_hot: lease = %d, want 20 for every key", q.Rule.Lease)
	}
}

// BenchmarkHotKeysAllow is what counting costs a decision of two rules, beside the inner
// limiter's own cost (here none): a lock, two map lookups and two heap fixes.
func BenchmarkHotKeysAllow(b *testing.B) {
	inner := &recordingLimiter{seen: make([]Request, 0, 2)}
	h, err := NewHotKeys(inner, nil, HotKeysOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rule := Rule{ID: "api", Algorithm: TokenBucket, Limit: 100, Window: time.Second}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		reqs := [2]Request{{Rule: rule, Key: keys[i%len(keys)]}, {Rule: rule, Key: "route:events"}}
		_, _ = h.Allow(ctx, reqs[:])
		inner.seen = inner.seen[:0]
		i++
	}
}
