package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/testkit"
)

// leasedReplicas builds n gateway replicas, each with its own Redis client on clk's virtual
// time, behind Leases.
func leasedReplicas(t *testing.T, srv *testkit.Redis, clk *fakeClock, hook *countingHook, n int) []*Leases {
	t.Helper()
	var ls []*Leases
	for range n {
		c := srv.Client()
		c.AddHook(hook)
		store := NewRedis(c)
		store.now = clk.Now
		ls = append(ls, NewLeases(store, clk.Clock()))
	}
	return ls
}

// TestLeasesOvershootBound: three replicas leasing batches of 10 from a 100-per-second
// window, under concurrent load over five windows, never let more than 100 + 3×10 pass in
// a window.
func TestLeasesOvershootBound(t *testing.T) {
	const replicas, batch, limit, windows = 3, 10, 100, 5
	srv := testkit.StartRedis(t)
	clk := newClock(epoch)
	ls := leasedReplicas(t, srv, clk, &countingHook{}, replicas)
	rule := Rule{ID: "hot", Algorithm: FixedWindow, Limit: limit, Window: time.Second, Lease: batch}
	req := []Request{{Rule: rule, Key: "event:final"}}
	for w := range windows {
		var allowed atomic.Int64
		for step := range 10 {
			clk.Set(epoch.Add(time.Duration(w)*time.Second + time.Duration(step)*100*time.Millisecond))
			var wg sync.WaitGroup
			for _, l := range ls {
				for range 2 {
					wg.Go(func() {
						for range 3 + w%3 { // demand varies so some windows end with tokens in hand
							if allowedInGoroutine(t, l, req) {
								allowed.Add(1)
							}
						}
					})
				}
			}
			wg.Wait()
		}
		if got, bound := allowed.Load(), int64(limit+replicas*batch); got > bound {
			t.Errorf("window %d: allowed %d, want at most %d (limit + replicas × batch)", w, got, bound)
		}
	}
}

// TestLeasesCarryOverIsTheOvershoot shows where the overshoot comes from: tokens taken at
// the end of one window and spent in the next.
func TestLeasesCarryOverIsTheOvershoot(t *testing.T) {
	srv := testkit.StartRedis(t)
	clk := newClock(epoch)
	hook := &countingHook{}
	ls := leasedReplicas(t, srv, clk, hook, 2)
	rule := Rule{ID: "hot", Algorithm: FixedWindow, Limit: 100, Window: time.Second, Lease: 10}
	req := []Request{{Rule: rule, Key: "event:final"}}

	clk.Set(epoch.Add(900 * time.Millisecond))
	if res := mustAllow(t, ls[0], req); !res.Allowed || res.Remaining != 99 {
		t.Fatalf("first request: allowed %v, remaining %d; want true 99 (90 in the store, 9 in hand)", res.Allowed, res.Remaining)
	}
	clk.Set(epoch.Add(time.Second)) // next window: replica 1 drains the store
	n := 0
	for range 120 {
		if mustAllow(t, ls[1], req).Allowed {
			n++
		}
	}
	for mustAllow(t, ls[0], req).Allowed { // replica 0 still holds 9 tokens from the last window
		n++
	}
	if n != 109 {
		t.Errorf("allowed in one window = %d, want 109 (100 from the store + 9 carried over ≤ limit + batch)", n)
	}
}

func TestLeasesSaveRoundTrips(t *testing.T) {
	srv := testkit.StartRedis(t)
	clk := newClock(epoch)
	hook := &countingHook{}
	l := leasedReplicas(t, srv, clk, hook, 1)[0]
	rule := Rule{ID: "hot", Algorithm: TokenBucket, Limit: 1000, Window: time.Second, Lease: 25}
	var before int64
	for i := range 100 {
		if i == 1 { // the first call also connects and loads the script
			before = hook.trips.Load()
		}
		if res := mustAllow(t, l, []Request{{Rule: rule, Key: "k"}}); !res.Allowed {
			t.Fatalf("denied with a 1000-token bucket")
		}
	}
	// Requests 1-25 spend the first batch; 26, 51 and 76 fetch the next ones.
	if got := hook.trips.Load() - before; got != 3 {
		t.Errorf("requests 2-100 with batches of 25 took %d round trips, want 3", got)
	}
}

func TestLeasesRefundWhenAnotherRuleDenies(t *testing.T) {
	clk := newClock(epoch)
	l := NewLeases(NewMemory(clk.Clock()), clk.Clock())
	hot := Request{Rule: Rule{ID: "hot", Algorithm: TokenBucket, Limit: 100, Window: time.Second, Lease: 10}, Key: "k"}
	strict := Request{Rule: Rule{ID: "strict", Algorithm: FixedWindow, Limit: 1, Window: time.Minute}, Key: "k"}
	if res := mustAllow(t, l, []Request{hot, strict}); !res.Allowed {
		t.Fatalf("first request denied, want allowed")
	}
	if res := mustAllow(t, l, []Request{hot, strict}); res.Allowed {
		t.Fatalf("second request allowed past the strict rule, want denied")
	}
	// 9 in hand after the first request, none spent by the denied one.
	for i := range 9 {
		if res := mustAllow(t, l, []Request{hot}); res.Path != PathLease {
			t.Fatalf("request %d: path %s, want lease (tokens in hand)", i, res.Path)
		}
	}
	if res := mustAllow(t, l, []Request{hot}); res.Path != PathMemory {
		t.Errorf("request after the batch ran out: path %s, want memory (a new batch)", res.Path)
	}
}

// allowedInGoroutine is mustAllow for goroutines other than the test's, where Fatal is not
// allowed: an error is reported and counts as denied.
func allowedInGoroutine(t *testing.T, l Limiter, reqs []Request) bool {
	res, err := l.Allow(context.Background(), reqs)
	if err != nil {
		t.Errorf("Allow: %v", err)
		return false
	}
	return res.Allowed
}

func TestShardKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"user:42", "user:42#3"},
		{"{user:42}:route:holds", "{user:42#3}:route:holds"},
		{"{}odd", "{}odd#3"},
	}
	for _, tt := range tests {
		if got := shardKey(tt.key, 3); got != tt.want {
			t.Errorf("shardKey(%q, 3) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestShardedSpreadsOverClusterNodes: a 100-token bucket in four shards on a three-node
// cluster lets exactly 100 of 1,000 concurrent requests through, and its keys live on more
// than one node.
func TestShardedSpreadsOverClusterNodes(t *testing.T) {
	rc := testkit.StartRedisCluster(t)
	var next atomic.Int64
	roundRobin := func(n int) int { return int(next.Add(1)) % n }
	rule := Rule{ID: "hot", Algorithm: TokenBucket, Limit: 100, Window: time.Hour, Shards: 4}
	var sharded []*Sharded
	for range 3 {
		sharded = append(sharded, NewSharded(NewRedis(rc.Client()), roundRobin))
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Go(func() {
			if allowedInGoroutine(t, sharded[i%3], []Request{{Rule: rule, Key: "event:final"}}) {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 100 {
		t.Errorf("allowed %d of 1000 over 4 shards of a 100-token bucket, want 100", got)
	}
	nodes := 0
	for _, n := range rc.Nodes {
		if keys, err := n.Client().DBSize(context.Background()).Result(); err == nil && keys > 0 {
			nodes++
		}
	}
	if nodes < 2 {
		t.Errorf("shard keys on %d node(s), want at least 2", nodes)
	}
}

// Decisions on tokens in hand never reach Failsafe, which counts the others: Leases counts
// them in the same series, with path lease.
func TestLeasesCountDecisionsInHand(t *testing.T) {
	clk := newClock(epoch)
	reader := sdkmetric.NewManualReader()
	l, err := NewLeasesWith(NewMemory(clk.Clock()), LeasesOptions{Clock: clk.Clock(), Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	hot := Request{Rule: Rule{ID: "hot", Algorithm: TokenBucket, Limit: 1000, Window: time.Minute, Lease: 10}, Key: "k"}
	for range 30 {
		if res := mustAllow(t, l, []Request{hot}); !res.Allowed {
			t.Fatal("denied with a 1000-token bucket")
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	// Requests 1, 11 and 21 fetch a batch from the store; the other 27 spend it.
	lease := []attribute.KeyValue{attribute.String("rule", "hot"), attribute.String("outcome", "allowed"), attribute.String("path", "lease")}
	if got := sum(rm, "ratelimit.decisions", lease...); got != 27 {
		t.Errorf("ratelimit.decisions%v = %d, want 27", lease, got)
	}
}

// Tokens in hand expire with their window; the keys that held them must not stay in memory,
// or a lease on a per-user limit would grow with every user ever seen.
func TestLeasesSweepExpiredKeys(t *testing.T) {
	clk := newClock(epoch)
	l := NewLeases(NewMemory(clk.Clock()), clk.Clock())
	rule := Rule{ID: "per-user", Algorithm: TokenBucket, Limit: 100, Window: time.Second, Lease: 5}
	for i := range 500 {
		mustAllow(t, l, []Request{{Rule: rule, Key: fmt.Sprintf("user:%d", i)}})
	}
	if n := len(l.held); n < 400 {
		t.Fatalf("keys held after 500 users = %d, want about 500 (the sweep runs every len(held) calls)", n)
	}
	clk.Add(2 * time.Second) // every lease's window is over
	for range 600 {
		mustAllow(t, l, []Request{{Rule: rule, Key: "user:active"}})
	}
	if n := len(l.held); n != 1 {
		t.Errorf("keys held after their windows ended = %d, want 1 (the active user's)", n)
	}
}

// A request naming no leased or sharded rule goes through both wrappers as it is: the inner
// limiter gets the caller's own slice, with nothing copied, held or locked on the way.
func TestHotKeyWrappersPassThrough(t *testing.T) {
	clk := newClock(epoch)
	inner := &passedLimiter{Limiter: NewMemory(clk.Clock())}
	wrapped := NewLeases(NewSharded(inner, nil), clk.Clock())
	reqs := []Request{
		{Rule: Rule{ID: "per-user", Algorithm: TokenBucket, Limit: 100, Window: time.Second}, Key: "user:1"},
		{Rule: Rule{ID: "per-ip", Algorithm: GCRA, Limit: 100, Window: time.Second}, Key: "ip:1"},
	}
	if res := mustAllow(t, wrapped, reqs); !res.Allowed {
		t.Fatal("denied with 100-token limits")
	}
	if inner.got == nil || &inner.got[0] != &reqs[0] {
		t.Error("the inner limiter got a copy of the request, want the caller's slice passed as it is")
	}
	if n := len(wrapped.held); n != 0 {
		t.Errorf("keys held for rules with no lease = %d, want 0", n)
	}

	// A leased rule does take the wrappers' path.
	reqs[0].Rule.Lease = 10
	mustAllow(t, wrapped, reqs)
	if &inner.got[0] == &reqs[0] {
		t.Error("a request with a leased rule reached the inner limiter as it was, want its batch request")
	}
}

// A leased decision reports the budget as the replica knows it, as a client reads its
// headers: what the store had left at the last batch plus the tokens in hand, and the
// store's reset counting down, whether the store or the hand decided.
func TestLeasesReportTheBudgetAsKnown(t *testing.T) {
	clk := newClock(epoch)
	l := NewLeases(NewMemory(clk.Clock()), clk.Clock())
	rule := Rule{ID: "hot", Algorithm: TokenBucket, Limit: 100, Window: 100 * time.Second, Lease: 10} // a token a second
	req := []Request{{Rule: rule, Key: "k"}}
	tests := []struct {
		name          string
		advance       time.Duration
		wantRemaining int
		wantReset     time.Duration
	}{
		{"batch taken from the store", 0, 99, 10 * time.Second}, // 90 stored, 9 in hand
		{"spent in hand", 4 * time.Second, 98, 6 * time.Second},
		{"spent in hand later", 3 * time.Second, 97, 3 * time.Second},
	}
	for _, tt := range tests {
		clk.Add(tt.advance)
		res := mustAllow(t, l, req)
		if !res.Allowed || res.Remaining != tt.wantRemaining || res.Reset != tt.wantReset || res.Limit != 100 {
			t.Errorf("%s: allowed %v, limit %d, remaining %d, reset %v; want true, 100, %d, %v",
				tt.name, res.Allowed, res.Limit, res.Remaining, res.Reset, tt.wantRemaining, tt.wantReset)
		}
	}
}

// A sharded decision speaks of the whole rule: its limit, and its shard's remaining scaled
// to all shards, never above the capacity.
func TestShardedReportsTheWholeRule(t *testing.T) {
	clk := newClock(epoch)
	shardOf := 0
	s := NewSharded(NewMemory(clk.Clock()), func(int) int { return shardOf })
	rule := Rule{ID: "hot", Algorithm: TokenBucket, Limit: 100, Window: time.Minute, Burst: 10, Shards: 4}
	other := Request{Rule: Rule{ID: "per-ip", Algorithm: FixedWindow, Limit: 1000, Window: time.Minute}, Key: "ip:1"}
	req := []Request{{Rule: rule, Key: "k"}, other}
	// Shard 0 holds 3 of the burst of 10 (10/4 rounded up); 2 are left after a request.
	res := mustAllow(t, s, req)
	if d := res.Rules[0]; d.Limit != 100 || d.Remaining != 8 {
		t.Errorf("first request: limit %d, remaining %d; want 100 (the rule's), 8 (2 left × 4 shards)", d.Limit, d.Remaining)
	}
	if res.Rule != "hot" || res.Remaining != 8 {
		t.Errorf("effective decision: rule %s, remaining %d; want hot, 8 (the closest to exhaustion, recomputed)", res.Rule, res.Remaining)
	}
	mustAllow(t, s, req)
	mustAllow(t, s, req)
	res = mustAllow(t, s, req)
	if d := res.Rules[0]; d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.Limit != 100 {
		t.Errorf("shard drained: allowed %v, limit %d, remaining %d, retry after %v; want false, 100, 0, > 0", d.Allowed, d.Limit, d.Remaining, d.RetryAfter)
	}
	if res.Allowed || res.Rule != "hot" {
		t.Errorf("effective decision: allowed %v by %s, want denied by hot", res.Allowed, res.Rule)
	}
}

// passedLimiter records the slice its last Allow got.
type passedLimiter struct {
	Limiter
	got []Request
}

func (p *passedLimiter) Allow(ctx context.Context, reqs []Request) (Result, error) {
	p.got = reqs
	return p.Limiter.Allow(ctx, reqs)
}
