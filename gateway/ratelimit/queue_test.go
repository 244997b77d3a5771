package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// shaped is the rule of the shaping examples: 10 a second, a queue of 20 (the request that
// leaves now included), no wait over 2 s. nodelay is the same bucket without the waits: a
// GCRA meter of burst 20.
var (
	shaped  = Rule{ID: "shaped", Algorithm: GCRA, Limit: 10, Window: time.Second, Burst: 20, MaxDelay: 2 * time.Second}
	nodelay = Rule{ID: "nodelay", Algorithm: GCRA, Limit: 10, Window: time.Second, Burst: 20}
)

// fortyAtOnce asks l 40 times at one instant of clk and returns the decisions in order.
func fortyAtOnce(t *testing.T, l Limiter, clk *fakeClock, rule Rule) []Decision {
	t.Helper()
	clk.Set(epoch)
	steps := make([]step, 40)
	for i := range steps {
		steps[i] = step{key: "fan"}
	}
	return replay(t, l, clk, rule, steps)
}

// TestQueueFortyAtOnce: 40 requests at once into a queue of 20 at 10 a second. The first
// passes at once and the next 19 wait their turn, 100 ms apart, up to 1.9 s: 20 served over
// about 2 s. The other 20 find the queue full and are refused, told to come back when the
// first place frees, 100 ms later. nodelay counts the same 20 and lets them all through at
// once. In memory and on Redis, and through the gateway's chain of layers.
func TestQueueFortyAtOnce(t *testing.T) {
	srv := testkit.StartRedis(t)
	for _, tt := range []struct {
		name string
		rule Rule
		// waits are the delays of the served requests, in order.
		waits func(i int) time.Duration
	}{
		{"queue", shaped, func(i int) time.Duration { return time.Duration(i) * 100 * time.Millisecond }},
		{"nodelay", nodelay, func(int) time.Duration { return 0 }},
	} {
		limiters := map[string]func(clk *fakeClock) Limiter{
			"memory": func(clk *fakeClock) Limiter { return NewMemory(clk.Clock()) },
			"redis": func(clk *fakeClock) Limiter {
				r := NewRedis(srv.Client())
				r.now = clk.Now
				return r
			},
			"chain on redis": func(clk *fakeClock) Limiter {
				r := NewRedis(srv.Client())
				r.now = clk.Now
				f, err := NewFailsafe(r, FailsafeOptions{Timeout: 10 * time.Second, DenyFor: -1, Clock: clk.Clock()})
				if err != nil {
					t.Fatal(err)
				}
				return NewLeases(NewSharded(f, nil), clk.Clock())
			},
		}
		for name, limiter := range limiters {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				clk := newClock(epoch)
				rule := tt.rule
				rule.ID += "-" + name // a key of its own in the one Redis
				ds := fortyAtOnce(t, limiter(clk), clk, rule)
				for i, d := range ds {
					switch {
					case i < 20 && (!d.Allowed || d.Delay != tt.waits(i)):
						t.Errorf("request %d: allowed %v after %v, want allowed after %v", i, d.Allowed, d.Delay, tt.waits(i))
					case i >= 20 && (d.Allowed || d.RetryAfter != 100*time.Millisecond || d.Delay != 0):
						t.Errorf("request %d: allowed %v, retry after %v, delay %v; want refused, retry after 100ms",
							i, d.Allowed, d.RetryAfter, d.Delay)
					}
				}
			})
		}
	}
}

// TestQueueOrdersConcurrentRequests: 40 requests at once from 40 goroutines each reserve a
// place of their own: the served ones wait 0, 100 ms, … 1.9 s, each wait given once.
func TestQueueOrdersConcurrentRequests(t *testing.T) {
	clk := newClock(epoch)
	m := NewMemory(clk.Clock())
	var mu sync.Mutex
	var waits []time.Duration
	refused := 0
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			res := mustAllow(t, m, []Request{{Rule: shaped, Key: "fan"}})
			mu.Lock()
			defer mu.Unlock()
			if res.Allowed {
				waits = append(waits, res.Delay)
			} else {
				refused++
			}
		})
	}
	wg.Wait()
	slices.Sort(waits)
	want := make([]time.Duration, 20)
	for i := range want {
		want[i] = time.Duration(i) * 100 * time.Millisecond
	}
	if !slices.Equal(waits, want) || refused != 20 {
		t.Errorf("waits %v and %d refused, want %v and 20 refused", waits, refused, want)
	}
}

// TestQueueMaxDelayBinds: a queue longer than its max delay is cut by the delay. At 10 a
// second with a queue of 100 and no wait over 1 s, 11 are served (0 to 1 s), and a request of
// cost 3 fits only if its turn comes within 1 s.
func TestQueueMaxDelayBinds(t *testing.T) {
	clk := newClock(epoch)
	m := NewMemory(clk.Clock())
	rule := Rule{ID: "long", Algorithm: GCRA, Limit: 10, Window: time.Second, Burst: 100, MaxDelay: time.Second}
	served := 0
	for range 40 {
		if res := mustAllow(t, m, []Request{{Rule: rule, Key: "k"}}); res.Allowed {
			served++
			if res.Delay > time.Second {
				t.Fatalf("delay %v over the max delay 1s", res.Delay)
			}
		}
	}
	if served != 11 {
		t.Errorf("served %d, want 11 (waits 0, 100ms, … 1s)", served)
	}
	// The queue ends 1.1 s ahead: 150 ms later a request waits 950 ms, within the bound.
	clk.Add(150 * time.Millisecond)
	res := mustAllow(t, m, []Request{{Rule: rule, Key: "k", Cost: 3}})
	if !res.Allowed || res.Delay != 950*time.Millisecond {
		t.Errorf("cost 3 after 150ms: allowed %v after %v, want allowed after 950ms", res.Allowed, res.Delay)
	}
}

// TestQueueSurvivesFallback: with the store down, a shaped rule decides on the local
// fallback at limit/N and burst/N and still delays rather than refuses: with two replicas,
// 5 a second and a queue of 10, waits 0 to 1.8 s, 200 ms apart.
func TestQueueSurvivesFallback(t *testing.T) {
	clk := testkit.NewClock(epoch, 0)
	store := newFlakyStore(clk.Now)
	store.fail(refused)
	f := newTestFailsafe(t, store, clk, FailsafeOptions{Replicas: fixedReplicas(2)})
	var waits []time.Duration
	for range 40 {
		res := mustAllow(t, f, []Request{{Rule: shaped, Key: "fan"}})
		if res.Allowed {
			if res.Path != PathFallback {
				t.Fatalf("path %s, want %s", res.Path, PathFallback)
			}
			waits = append(waits, res.Delay)
		}
	}
	want := make([]time.Duration, 10)
	for i := range want {
		want[i] = time.Duration(i) * 200 * time.Millisecond
	}
	if !slices.Equal(waits, want) {
		t.Errorf("fallback waits %v, want %v", waits, want)
	}
}

type fixedReplicas int

func (n fixedReplicas) Count() int { return int(n) }

// TestQueueShadowDoesNotWait: a shadow rule reports the wait it would give, and the request
// waits for none of it.
func TestQueueShadowDoesNotWait(t *testing.T) {
	clk := newClock(epoch)
	m := NewMemory(clk.Clock())
	rule := shaped
	rule.Mode = Shadow
	var res Result
	for range 3 {
		res = mustAllow(t, m, []Request{{Rule: rule, Key: "k"}})
	}
	if res.Delay != 0 || res.Rules[0].Delay != 200*time.Millisecond {
		t.Errorf("shadow: request delay %v, rule delay %v; want 0 and 200ms", res.Delay, res.Rules[0].Delay)
	}
}

// TestRedisMatchesMemoryQueued replays random traces through shaped rules on both
// implementations: the same decisions and the same waits, field by field.
func TestRedisMatchesMemoryQueued(t *testing.T) {
	srv := testkit.StartRedis(t)
	rules := []Rule{
		{ID: "queue-size-binds", Algorithm: GCRA, Limit: 3, Window: time.Second, Burst: 5, MaxDelay: 10 * time.Second},
		{ID: "queue-delay-binds", Algorithm: GCRA, Limit: 7, Window: 1300 * time.Millisecond, Burst: 12, MaxDelay: 450 * time.Millisecond},
		{ID: "queue-of-two", Algorithm: GCRA, Limit: 4, Window: time.Second, Burst: 2, MaxDelay: time.Second},
	}
	for seed := range uint64(4) {
		for _, rule := range rules {
			rule.ID = fmt.Sprintf("%s-%d", rule.ID, seed)
			t.Run(rule.ID, func(t *testing.T) {
				ds := replayBoth(t, srv.Client(), rule, randomTrace(rand.New(rand.NewPCG(seed, 11)), rule, 200))
				if !slices.ContainsFunc(ds, func(d Decision) bool { return d.Delay > 0 }) {
					t.Error("no request waited: the trace does not exercise the queue")
				}
			})
		}
	}
}

func TestValidateQueue(t *testing.T) {
	base := Rule{ID: "q", Algorithm: GCRA, Limit: 10, Window: time.Second, Burst: 20, MaxDelay: time.Second}
	for _, tt := range []struct {
		name  string
		edit  func(*Rule)
		field string // "" means valid
	}{
		{"gcra with a queue", func(*Rule) {}, ""},
		{"negative", func(r *Rule) { r.MaxDelay = -time.Second }, "max_delay"},
		{"under a microsecond", func(r *Rule) { r.MaxDelay = time.Nanosecond }, "max_delay"},
		{"token bucket", func(r *Rule) { r.Algorithm = TokenBucket }, "max_delay"},
		{"sliding window", func(r *Rule) { r.Algorithm = SlidingCounter }, "max_delay"},
		{"leased", func(r *Rule) { r.Lease = 5 }, "lease"},
		{"sharded", func(r *Rule) { r.Shards = 2 }, "shards"},
		{"too long", func(r *Rule) { r.MaxDelay = MaxWindow + time.Second }, "max_delay"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.edit(&r)
			err := r.Validate()
			var re *RuleError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.field != "" && (!errors.As(err, &re) || re.Field != tt.field):
				t.Errorf("Validate() = %v, want an error on %s", err, tt.field)
			}
		})
	}
}

// TestQueueMetrics: a queued request counts as delayed, its wait goes to the histogram, and
// a request that passes at once or is refused counts as before.
func TestQueueMetrics(t *testing.T) {
	clk := testkit.NewClock(epoch, 0)
	reader := sdkmetric.NewManualReader()
	f := newTestFailsafe(t, newFlakyStore(clk.Now), clk, FailsafeOptions{Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	for range 25 {
		mustAllow(t, f, []Request{{Rule: shaped, Key: "fan"}})
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for outcome, want := range map[string]int64{"allowed": 1, "delayed": 19, "denied": 5} {
		if got := sum(rm, "ratelimit.decisions", attribute.String("outcome", outcome)); got != want {
			t.Errorf("ratelimit.decisions{outcome=%s} = %d, want %d", outcome, got, want)
		}
	}
	if got := histogramCount(rm, "ratelimit.queue.delay"); got != 19 {
		t.Errorf("ratelimit.queue.delay count = %d, want 19", got)
	}
}
