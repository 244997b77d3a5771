package ratelimit

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// Edges of the bounds, as the tests below compute them: a 1/1h bucket refills a token every
// 3.6e9 µs, so its burst plus one request fits 2^52 µs up to a burst of 1 250 998; a sliding
// counter of a 1s window keeps (limit + 1) × 10^6 + limit below 2^53 up to 9 007 190 246.
const (
	hourBucketMaxBurst  = 1_250_998
	secondCounterMaxLim = 9_007_190_246
)

func TestValidateBounds(t *testing.T) {
	hour := Rule{ID: "r", Algorithm: TokenBucket, Limit: 1, Window: time.Hour}
	with := func(r Rule, f func(*Rule)) Rule { f(&r); return r }
	tests := []struct {
		name      string
		rule      Rule
		wantField string // "" for a valid rule
	}{
		{"limit at the bound", Rule{ID: "r", Algorithm: FixedWindow, Limit: MaxCount, Window: time.Second}, ""},
		{"limit past the bound", Rule{ID: "r", Algorithm: FixedWindow, Limit: MaxCount + 1, Window: time.Second}, "limit"},
		{"burst past 2^53, the audit's", with(hour, func(r *Rule) { r.Burst = 9007199254740993 }), "burst"},
		{"burst at the bound of a fast bucket", Rule{ID: "r", Algorithm: GCRA, Limit: 1_000_000, Window: time.Second, Burst: MaxCount}, ""},
		{"burst past the bound of a fast bucket", Rule{ID: "r", Algorithm: GCRA, Limit: 1_000_000, Window: time.Second, Burst: MaxCount + 1}, "burst"},
		{"cost past the bound", Rule{ID: "r", Algorithm: FixedWindow, Limit: 5, Window: time.Second, Cost: MaxCount + 1}, "cost"},
		{"lease past the bound", Rule{ID: "r", Algorithm: FixedWindow, Limit: 5, Window: time.Second, Lease: MaxCount + 1}, "lease"},
		{"window at the bound", Rule{ID: "r", Algorithm: FixedWindow, Limit: 1, Window: MaxWindow}, ""},
		{"window past the bound", Rule{ID: "r", Algorithm: FixedWindow, Limit: 1, Window: MaxWindow + time.Microsecond}, "window"},
		{"slow bucket, burst at the span", with(hour, func(r *Rule) { r.Burst = hourBucketMaxBurst }), ""},
		{"slow bucket, burst past the span", with(hour, func(r *Rule) { r.Burst = hourBucketMaxBurst + 1 }), "burst"},
		{"slow gcra, burst past the span", with(hour, func(r *Rule) { r.Algorithm, r.Burst = GCRA, hourBucketMaxBurst+1 }), "burst"},
		{"slow bucket, cost past the span", with(hour, func(r *Rule) { r.Burst, r.Cost = 2, hourBucketMaxBurst }), "cost"},
		{"slow bucket, lease past the span", with(hour, func(r *Rule) { r.Burst, r.Lease = 2, hourBucketMaxBurst }), "lease"},
		{"sliding counter at the bound", Rule{ID: "r", Algorithm: SlidingCounter, Limit: secondCounterMaxLim, Window: time.Second}, ""},
		{"sliding counter past the bound", Rule{ID: "r", Algorithm: SlidingCounter, Limit: secondCounterMaxLim + 1, Window: time.Second}, "limit"},
		// 2 per 2s with this burst fits; each of two shards refills half as fast and does not.
		{"whole rule at the span", Rule{ID: "r", Algorithm: TokenBucket, Limit: 2, Window: 2 * time.Second, Burst: 4_503_599_626}, ""},
		{"its shards past the span", Rule{ID: "r", Algorithm: TokenBucket, Limit: 2, Window: 2 * time.Second, Burst: 4_503_599_626, Shards: 2}, "shards"},
		{"sliding log at the bound", Rule{ID: "r", Algorithm: SlidingLog, Limit: MaxLogLimit, Window: time.Minute}, ""},
		{"sliding log past the bound", Rule{ID: "r", Algorithm: SlidingLog, Limit: MaxLogLimit + 1, Window: time.Minute}, "limit"},
		{"negative burst", with(hour, func(r *Rule) { r.Burst = -1 }), "burst"},
		{"unknown mode", with(hour, func(r *Rule) { r.Mode = "loud" }), "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rule.Validate()
			var re *RuleError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("Validate(%+v) = %v, want nil", tt.rule, err)
			case tt.wantField != "" && (!errors.As(err, &re) || re.Field != tt.wantField):
				t.Errorf("Validate(%+v) = %v, want a *RuleError naming %s", tt.rule, err, tt.wantField)
			}
		})
	}
}

// TestRedisExactAtTheBounds runs rules at the edge of the bounds through the Lua scripts and
// the in-memory twin on one virtual clock: every number the scripts compute is still an
// exact integer, so the two decide alike to the microsecond.
func TestRedisExactAtTheBounds(t *testing.T) {
	srv := testkit.StartRedis(t)
	rules := []Rule{
		{ID: "tb", Algorithm: TokenBucket, Limit: 1, Window: time.Hour, Burst: hourBucketMaxBurst},
		{ID: "gcra", Algorithm: GCRA, Limit: 1, Window: time.Hour, Burst: hourBucketMaxBurst},
		{ID: "fast", Algorithm: GCRA, Limit: 1_000_000, Window: time.Second, Burst: MaxCount},
		{ID: "sc", Algorithm: SlidingCounter, Limit: secondCounterMaxLim, Window: time.Second},
		{ID: "fw", Algorithm: FixedWindow, Limit: MaxCount, Window: MaxWindow},
	}
	for _, rule := range rules {
		t.Run(rule.ID, func(t *testing.T) {
			if err := rule.Validate(); err != nil {
				t.Fatalf("Validate = %v, want a rule at the bound", err)
			}
			most := rule.capacity()
			steps := []step{
				{at: 0, key: "a", cost: 1},
				{at: 0, key: "a", cost: most - 1},              // the rest of the budget
				{at: 1, key: "a", cost: 1},                     // denied: the longest wait
				{at: 2, key: "a", cost: most},                  // denied: a whole budget
				{at: 3, key: "a", cost: min(most+1, MaxCount)}, // never fits (a request costs MaxCount at most)
				{at: rule.Window / 2, key: "a", cost: 1},
				{at: rule.Window/2 + 1, key: "a", cost: most / 3},
				{at: rule.Window + 7*time.Microsecond, key: "a", cost: most / 2},
			}
			got := replayBoth(t, srv.Client(), rule, steps)
			if fmt.Sprint(got) == fmt.Sprint(make([]Decision, len(steps))) {
				t.Fatal("no decisions")
			}
		})
	}
}
