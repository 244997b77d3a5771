package ratelimit

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"boxoffice.dev/platform/clock"
)

// at is one request of a scenario and what the rule must answer.
type at struct {
	after     time.Duration // since the previous request
	cost      int
	allowed   bool
	remaining int
	retry     time.Duration
}

func TestMemoryAlgorithms(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		rule  Rule
		steps []at
	}{
		{"fixed window resets at the boundary",
			Rule{ID: "r", Algorithm: FixedWindow, Limit: 2, Window: time.Second},
			[]at{{0, 1, true, 1, 0}, {100 * ms, 1, true, 0, 0}, {100 * ms, 1, false, 0, 800 * ms}, {800 * ms, 1, true, 1, 0}}},
		{"fixed window weighs cost",
			Rule{ID: "r", Algorithm: FixedWindow, Limit: 5, Window: time.Second},
			[]at{{0, 3, true, 2, 0}, {0, 3, false, 2, time.Second}, {0, 2, true, 0, 0}}},
		{"sliding log frees the oldest entry first",
			Rule{ID: "r", Algorithm: SlidingLog, Limit: 2, Window: time.Second},
			[]at{{0, 1, true, 1, 0}, {400 * ms, 1, true, 0, 0}, {100 * ms, 1, false, 0, 500 * ms}, {500 * ms, 1, true, 0, 0}}},
		{"sliding counter weighs the previous window",
			Rule{ID: "r", Algorithm: SlidingCounter, Limit: 4, Window: time.Second},
			// 4 spent in window 0; at 0.5s into window 1 they weigh 2.
			[]at{{0, 4, true, 0, 0}, {1500 * ms, 1, true, 1, 0}, {0, 3, false, 1, 250*ms + time.Microsecond}}},
		{"token bucket refills lazily one token per interval",
			Rule{ID: "r", Algorithm: TokenBucket, Limit: 10, Window: time.Second, Burst: 2},
			[]at{{0, 1, true, 1, 0}, {0, 1, true, 0, 0}, {50 * ms, 1, false, 0, 50 * ms}, {50 * ms, 1, true, 0, 0}, {250 * ms, 2, true, 0, 0}}},
		{"token bucket cost above burst never passes",
			Rule{ID: "r", Algorithm: TokenBucket, Limit: 10, Window: time.Second, Burst: 2},
			[]at{{0, 3, false, 2, time.Second}}},
		{"gcra allows a burst then the rate",
			Rule{ID: "r", Algorithm: GCRA, Limit: 10, Window: time.Second, Burst: 2},
			[]at{{0, 1, true, 1, 0}, {0, 1, true, 0, 0}, {0, 1, false, 0, 100 * ms}, {100 * ms, 1, true, 0, 0}, {30 * ms, 1, false, 0, 70 * ms}}},
		{"concurrency counts leases until they expire",
			Rule{ID: "r", Algorithm: Concurrency, Limit: 2, Window: time.Second},
			[]at{{0, 1, true, 1, 0}, {300 * ms, 5, true, 0, 0}, {0, 1, false, 0, 700 * ms}, {700 * ms, 1, true, 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(epoch)
			m := NewMemory(clk.Clock())
			for i, s := range tt.steps {
				clk.Add(s.after)
				res, err := m.Allow(context.Background(), []Request{{Rule: tt.rule, Key: "k", Cost: s.cost}})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				got := res.Rules[0]
				if got.Allowed != s.allowed || got.Remaining != s.remaining || got.RetryAfter != s.retry {
					t.Errorf("step %d: Allow(cost %d) = allowed %v remaining %d retry %v, want %v %d %v",
						i, s.cost, got.Allowed, got.Remaining, got.RetryAfter, s.allowed, s.remaining, s.retry)
				}
			}
		})
	}
}

// TestMemoryRetryAfterAndReset checks the promises of a decision on random traces: a denied
// request passes exactly RetryAfter later, not a microsecond sooner, and the full budget is
// back exactly Reset later.
func TestMemoryRetryAfterAndReset(t *testing.T) {
	for _, rule := range testRules() {
		t.Run(rule.ID, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(rule.ID))))
			steps := randomTrace(rng, rule, 60)
			for i, s := range steps {
				d := probe(t, rule, steps[:i], s)
				if !d.Allowed && d.RetryAfter < rule.Window && s.cost <= rule.capacity() {
					if got := probe(t, rule, steps[:i], step{at: s.at + d.RetryAfter, key: s.key, cost: s.cost}); !got.Allowed {
						t.Errorf("step %d denied with RetryAfter %v; retried then: allowed = false, want true", i, d.RetryAfter)
					}
					if got := probe(t, rule, steps[:i], step{at: s.at + d.RetryAfter - time.Microsecond, key: s.key, cost: s.cost}); got.Allowed {
						t.Errorf("step %d denied with RetryAfter %v; retried 1µs sooner: allowed = true, want false", i, d.RetryAfter)
					}
				}
				full := rule.capacity() - 1
				if got := probe(t, rule, steps[:i+1], step{at: s.at + d.Reset, key: s.key, cost: 1}); got.Remaining != full {
					t.Errorf("step %d: Reset %v; probed then: remaining = %d, want %d", i, d.Reset, got.Remaining, full)
				}
				if d.Reset > 0 {
					if got := probe(t, rule, steps[:i+1], step{at: s.at + d.Reset - time.Microsecond, key: s.key, cost: 1}); got.Remaining >= full {
						t.Errorf("step %d: Reset %v; probed 1µs sooner: remaining = %d, want below %d", i, d.Reset, got.Remaining, full)
					}
				}
			}
		})
	}
}

// probe replays history on a fresh limiter and returns the decision for last.
func probe(t *testing.T, rule Rule, history []step, last step) Decision {
	t.Helper()
	clk := newClock(epoch)
	ds := replay(t, NewMemory(clk.Clock()), clk, rule, append(append([]step(nil), history...), last))
	return ds[len(ds)-1]
}

func TestMemoryDenialSpendsNothing(t *testing.T) {
	clk := newClock(epoch)
	m := NewMemory(clk.Clock())
	perUser := Rule{ID: "per-user", Algorithm: TokenBucket, Limit: 10, Window: time.Second}
	perIP := Rule{ID: "per-ip", Algorithm: FixedWindow, Limit: 1, Window: time.Minute}
	shadow := Rule{ID: "watch", Algorithm: FixedWindow, Limit: 1, Window: time.Minute, Mode: Shadow}
	reqs := []Request{{Rule: perUser, Key: "user:1"}, {Rule: perIP, Key: "ip:1"}, {Rule: shadow, Key: "user:1"}}

	tests := []struct {
		name        string
		allowed     bool
		userLeft    int
		effective   string
		path        Path
		shadowDenis bool
	}{
		{"first passes and spends every rule", true, 9, "per-ip", PathMemory, false},
		{"per-ip denies; per-user keeps its tokens", false, 9, "per-ip", PathMemory, true},
		{"denied again; still nothing spent", false, 9, "per-ip", PathMemory, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := m.Allow(context.Background(), reqs)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed != tt.allowed || res.Rules[0].Remaining != tt.userLeft || res.Rule != tt.effective || res.Path != tt.path {
				t.Errorf("Allow = allowed %v, per-user remaining %d, rule %s, path %s; want %v %d %s %s",
					res.Allowed, res.Rules[0].Remaining, res.Rule, res.Path, tt.allowed, tt.userLeft, tt.effective, tt.path)
			}
			if got := !res.Rules[2].Allowed; got != tt.shadowDenis {
				t.Errorf("shadow rule denied = %v, want %v", got, tt.shadowDenis)
			}
		})
	}
}

func TestMemoryShadowRuleNeverDenies(t *testing.T) {
	clk := newClock(epoch)
	m := NewMemory(clk.Clock())
	shadow := Rule{ID: "watch", Algorithm: FixedWindow, Limit: 1, Window: time.Minute, Mode: Shadow}
	open := Rule{ID: "open", Algorithm: FixedWindow, Limit: 100, Window: time.Minute}
	var res Result
	for range 3 {
		var err error
		if res, err = m.Allow(context.Background(), []Request{{Rule: open, Key: "k"}, {Rule: shadow, Key: "k"}}); err != nil {
			t.Fatal(err)
		}
	}
	if !res.Allowed || res.Path != PathShadow || res.Rules[1].Allowed {
		t.Errorf("third Allow = allowed %v path %s, shadow allowed %v; want true shadow false", res.Allowed, res.Path, res.Rules[1].Allowed)
	}
	if res.Rules[0].Remaining != 97 {
		t.Errorf("open rule remaining = %d, want 97", res.Rules[0].Remaining)
	}
}

func TestMemoryConcurrencyRelease(t *testing.T) {
	clk := newClock(epoch)
	m := NewMemory(clk.Clock())
	rule := Rule{ID: "inflight", Algorithm: Concurrency, Limit: 1, Window: time.Minute}
	req := []Request{{Rule: rule, Key: "k"}}
	first, _ := m.Allow(context.Background(), req)
	if !first.Allowed || len(first.Leases()) != 1 {
		t.Fatalf("first Allow = allowed %v with %d leases, want true with 1", first.Allowed, len(first.Leases()))
	}
	if second, _ := m.Allow(context.Background(), req); second.Allowed {
		t.Fatalf("second Allow while the lease is held = allowed, want denied")
	}
	if err := m.Release(context.Background(), first.Leases()...); err != nil {
		t.Fatal(err)
	}
	if third, _ := m.Allow(context.Background(), req); !third.Allowed {
		t.Errorf("Allow after Release = denied, want allowed")
	}
}

func TestMemoryForgetsIdleKeys(t *testing.T) {
	clk := newClock(epoch)
	m := NewMemory(clk.Clock())
	rule := Rule{ID: "r", Algorithm: TokenBucket, Limit: 10, Window: time.Second}
	for i := range 100 {
		if _, err := m.Allow(context.Background(), []Request{{Rule: rule, Key: string(rune('a' + i%26))}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Len(); got != 26 {
		t.Fatalf("Len after 26 clients = %d, want 26", got)
	}
	clk.Add(time.Second)
	for range 100 {
		if _, err := m.Allow(context.Background(), []Request{{Rule: rule, Key: "active"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Len(); got != 1 {
		t.Errorf("Len after the idle clients' buckets refilled = %d, want 1", got)
	}
}

func TestValidate(t *testing.T) {
	ok := Rule{ID: "r", Algorithm: GCRA, Limit: 5, Window: time.Second}
	tests := []struct {
		name string
		reqs []Request
		bad  bool
	}{
		{"valid", []Request{{Rule: ok, Key: "a"}}, false},
		{"no id", []Request{{Rule: Rule{Algorithm: GCRA, Limit: 1, Window: time.Second}}}, true},
		{"unknown algorithm", []Request{{Rule: Rule{ID: "r", Algorithm: "leaky", Limit: 1, Window: time.Second}}}, true},
		{"zero limit", []Request{{Rule: Rule{ID: "r", Algorithm: GCRA, Window: time.Second}}}, true},
		{"rate above one per µs", []Request{{Rule: Rule{ID: "r", Algorithm: TokenBucket, Limit: 2000, Window: time.Millisecond}}}, true},
		{"sliding counter too large", []Request{{Rule: Rule{ID: "r", Algorithm: SlidingCounter, Limit: 1 << 30, Window: 24 * time.Hour}}}, true},
		{"same rule and key twice", []Request{{Rule: ok, Key: "a"}, {Rule: ok, Key: "a"}}, true},
		{"negative cost", []Request{{Rule: ok, Key: "a", Cost: -1}}, true},
		{"cost past what a count may hold", []Request{{Rule: ok, Key: "a", Cost: MaxCount + 1}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewMemory(clock.Clock{}).Allow(context.Background(), tt.reqs)
			if (err != nil) != tt.bad {
				t.Errorf("Allow(%s) error = %v, want error %v", tt.name, err, tt.bad)
			}
		})
	}
}

// A time older than one already decided at is treated as that time: under contention a
// caller's clock reading can lag states other callers saved, and must not make it look early.
func TestMemoryTimeNeverRunsBackwards(t *testing.T) {
	t0 := time.Unix(100, 0)
	reading := t0
	m := NewMemory(clock.Func(func() time.Time { return reading }))
	rule := Rule{ID: "wide", Algorithm: GCRA, Limit: 1_000_000, Window: time.Second, Burst: 1_000_000}
	req := []Request{{Rule: rule, Key: "k"}}
	for range 10 {
		if res, err := m.Allow(context.Background(), req); err != nil || !res.Allowed {
			t.Fatalf("Allow at t0 = %+v, %v; want allowed", res.Decision, err)
		}
	}
	reading = t0.Add(-2 * time.Second) // a stale reading
	if res, _ := m.Allow(context.Background(), req); !res.Allowed {
		t.Fatalf("Allow with a clock 2s behind = denied (retry %v), want allowed as at t0", res.RetryAfter)
	}
}
