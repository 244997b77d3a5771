package ratelimit

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// rolloutKeys is the population the rollout tests draw from: user:0 … user:999.
func rolloutKeys() []string {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	return keys
}

// The share of 1,000 keys a rule at 30 % enforces: the hash is deterministic, so the count is
// one fixed number, but it should look like a draw of Binomial(1000, 0.3): mean 300,
// standard deviation √(1000 × 0.3 × 0.7) ≈ 14.5. Four of them either side: 242 to 358.
const (
	rolloutMin = 242
	rolloutMax = 358
)

// TestEnforcesPicksAStableMonotoneShare checks the choice of keys on its own: about the
// percentage, only adding keys as it rises, none at 0, all at 100, its own keys per rule.
func TestEnforcesPicksAStableMonotoneShare(t *testing.T) {
	keys := rolloutKeys()
	picked := func(rule string, percent int) []string {
		var in []string
		for _, k := range keys {
			if Enforces(rule, k, percent) {
				in = append(in, k)
			}
		}
		return in
	}
	at30 := picked("api", 30)
	if n := len(at30); n < rolloutMin || n > rolloutMax {
		t.Errorf("Enforces(api, ·, 30) picks %d of 1000 keys, want %d to %d", n, rolloutMin, rolloutMax)
	}
	if again := picked("api", 30); !slices.Equal(again, at30) {
		t.Errorf("Enforces(api, ·, 30) picked a different set on a second pass")
	}
	at50 := picked("api", 50)
	for _, k := range at30 {
		if !slices.Contains(at50, k) {
			t.Errorf("Enforces(api, %s, 30) = true but Enforces(api, %s, 50) = false, want raising the share to keep it", k, k)
		}
	}
	if n := len(at50); n < 437 || n > 563 { // 500 ± 4 × 15.8
		t.Errorf("Enforces(api, ·, 50) picks %d of 1000 keys, want 437 to 563", n)
	}
	if n := len(picked("api", 0)); n != 0 {
		t.Errorf("Enforces(api, ·, 0) picks %d keys, want 0", n)
	}
	if n := len(picked("api", 100)); n != len(keys) {
		t.Errorf("Enforces(api, ·, 100) picks %d keys, want all %d", n, len(keys))
	}
	other := picked("search", 30)
	both := 0
	for _, k := range other {
		if slices.Contains(at30, k) {
			both++
		}
	}
	// Independent choices share about 0.3 × 0.3 × 1000 = 90 keys; the same choice would share
	// all of them.
	if both > 150 {
		t.Errorf("rules api and search at 30 %% share %d of their keys, want their own picks (about 90 in common)", both)
	}
}

// TestPartialRuleDeniesItsShare runs 1,000 keys twice through a rule at 30 % with a limit of
// one, beside a shadow rule, on two gateway replicas sharing one Redis and on the in-memory
// limiter: the second request of a key is denied exactly when Enforces picks the key, the
// same keys everywhere, and the metrics count denied, unenforced and shadow apart.
func TestPartialRuleDeniesItsShare(t *testing.T) {
	srv := testkit.StartRedis(t)
	partial := Rule{ID: "api", Algorithm: FixedWindow, Limit: 1, Window: time.Hour, Mode: Partial, EnforcePercent: 30}
	shadow := Rule{ID: "watch", Algorithm: FixedWindow, Limit: 1, Window: time.Hour, Mode: Shadow}
	keys := rolloutKeys()
	var want []string
	for _, k := range keys {
		if Enforces(partial.ID, k, partial.EnforcePercent) {
			want = append(want, k)
		}
	}
	if n := len(want); n < rolloutMin || n > rolloutMax {
		t.Fatalf("rule at 30 %% enforces %d of 1000 keys, want %d to %d", n, rolloutMin, rolloutMax)
	}
	// pass sends every key once through l and returns the keys denied.
	pass := func(l Limiter) []string {
		t.Helper()
		var denied []string
		for _, k := range keys {
			res := mustAllow(t, l, []Request{{Rule: partial, Key: k}, {Rule: shadow, Key: k}})
			if !res.Allowed {
				denied = append(denied, k)
			}
		}
		return denied
	}

	reader := sdkmetric.NewManualReader()
	replica1, err := NewFailsafe(NewRedis(srv.Client()), FailsafeOptions{Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	if denied := pass(replica1); len(denied) != 0 {
		t.Fatalf("first pass denied %d keys, want none: each key's first request fits", len(denied))
	}
	if denied := pass(replica1); !slices.Equal(denied, want) {
		t.Errorf("second pass denied %d keys, want the %d Enforces picks", len(denied), len(want))
	}
	replica2, err := NewFailsafe(NewRedis(srv.Client()), FailsafeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if denied := pass(replica2); !slices.Equal(denied, want) {
		t.Errorf("another replica denied %d keys, want the same %d", len(denied), len(want))
	}
	mem := NewMemory(testkit.NewClock(time.Unix(1_700_000_000, 0), 0).Clock())
	pass(mem)
	if denied := pass(mem); !slices.Equal(denied, want) {
		t.Errorf("in memory the second pass denied %d keys, want the same %d", len(denied), len(want))
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	n := int64(len(want))
	for _, c := range []struct {
		rule, outcome string
		want          int64
	}{
		{"api", "allowed", 1000},
		{"api", "denied", n},
		{"api", "unenforced_denied", 1000 - n},
		{"watch", "allowed", 1000},
		{"watch", "shadow_denied", 1000},
	} {
		attrs := []attribute.KeyValue{attribute.String("rule", c.rule), attribute.String("outcome", c.outcome)}
		if got := sum(rm, "ratelimit.decisions", attrs...); got != c.want {
			t.Errorf("ratelimit.decisions{rule=%s, outcome=%s} = %d, want %d", c.rule, c.outcome, got, c.want)
		}
	}
}

// TestShardedPartialRuleDecidesByTheKey: a sharded rule's requests go to shards with keys
// of their own, but whether a key is enforced depends on the key alone.
func TestShardedPartialRuleDecidesByTheKey(t *testing.T) {
	rule := Rule{ID: "hot", Algorithm: FixedWindow, Limit: 4, Window: time.Hour, Shards: 4, Mode: Partial, EnforcePercent: 50}
	shard := 0
	l := NewSharded(NewMemory(testkit.NewClock(time.Unix(1_700_000_000, 0), 0).Clock()), func(n int) int { shard = (shard + 1) % n; return shard })
	for _, k := range rolloutKeys()[:40] {
		want := Enforces(rule.ID, k, rule.EnforcePercent)
		for range 4 { // one request to each shard: each shard's budget of one is spent
			mustAllow(t, l, []Request{{Rule: rule, Key: k}})
		}
		res := mustAllow(t, l, []Request{{Rule: rule, Key: k}})
		if res.Allowed == want || res.Rules[0].Unenforced == want {
			t.Errorf("%s over its budget: allowed %v unenforced %v, want allowed %v (Enforces = %v)", k, res.Allowed, res.Rules[0].Unenforced, !want, want)
		}
	}
}

func TestRuleValidateEnforcePercent(t *testing.T) {
	for _, p := range []int{-1, 101} {
		r := Rule{ID: "api", Algorithm: FixedWindow, Limit: 1, Window: time.Second, Mode: Partial, EnforcePercent: p}
		err := r.Validate()
		if re, ok := err.(*RuleError); !ok || re.Field != "enforce_percent" {
			t.Errorf("Validate(enforce_percent %d) = %v, want a RuleError on enforce_percent", p, err)
		}
	}
}

// TestEnforcesAllocatesNothing: a partial rule asks Enforces on every request.
func TestEnforcesAllocatesNothing(t *testing.T) {
	var in bool
	if allocs := testing.AllocsPerRun(100, func() { in = Enforces("holds-per-account", "{user:4242}:route:holds", 30) }); allocs != 0 {
		t.Errorf("Enforces allocates %v times per call, want 0", allocs)
	}
	_ = in
}

// BenchmarkEnforces measures the choice a partial rule makes on every request.
func BenchmarkEnforces(b *testing.B) {
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if Enforces("holds-per-account", "{user:4242}:route:holds", 30) {
			n++
		}
	}
	_ = n
}
