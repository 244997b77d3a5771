package limits

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

// TestQuotaCoversRemaining: whatever the algorithm, burst and number of requests, the
// RateLimit-Policy quota of a rule is at least what RateLimit says remains, and
// X-RateLimit-Limit is the effective rule's quota.
func TestQuotaCoversRemaining(t *testing.T) {
	tests := []struct {
		name       string
		rule       ratelimit.Rule
		wantPolicy string
	}{
		{"token bucket, burst above the rate", ratelimit.Rule{ID: "wide", Algorithm: ratelimit.TokenBucket, Limit: 100, Window: time.Second, Burst: 199},
			`"wide";q=199;w=2`},
		{"gcra, burst above the rate", ratelimit.Rule{ID: "wide", Algorithm: ratelimit.GCRA, Limit: 5, Window: time.Minute, Burst: 7},
			`"wide";q=7;w=84`},
		{"token bucket, burst a whole number of windows", ratelimit.Rule{ID: "wide", Algorithm: ratelimit.TokenBucket, Limit: 100, Window: time.Second, Burst: 300},
			`"wide";q=300;w=3`},
		{"token bucket, burst below the rate", ratelimit.Rule{ID: "narrow", Algorithm: ratelimit.TokenBucket, Limit: 100, Window: time.Second, Burst: 10},
			`"narrow";q=100;w=1`},
		{"token bucket, burst the rate", ratelimit.Rule{ID: "even", Algorithm: ratelimit.TokenBucket, Limit: 5, Window: time.Minute, Burst: 5},
			`"even";q=5;w=60`},
		{"token bucket, no burst", ratelimit.Rule{ID: "even", Algorithm: ratelimit.TokenBucket, Limit: 5, Window: time.Minute},
			`"even";q=5;w=60`},
		{"fixed window ignores a burst", ratelimit.Rule{ID: "fixed", Algorithm: ratelimit.FixedWindow, Limit: 5, Window: time.Minute, Burst: 50},
			`"fixed";q=5;w=60`},
		{"sliding counter ignores a burst", ratelimit.Rule{ID: "sliding", Algorithm: ratelimit.SlidingCounter, Limit: 5, Window: time.Minute, Burst: 50},
			`"sliding";q=5;w=60`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs := []ratelimit.Request{{Rule: tt.rule, Key: "ip:x"}}
			for n := 1; n <= max(tt.rule.Limit, tt.rule.Burst)+1; n++ {
				h := http.Header{}
				SetHeaders(h, reqs, decide(t, reqs, n))
				if n == 1 && h.Get("RateLimit-Policy") != tt.wantPolicy {
					t.Errorf("RateLimit-Policy = %q, want %q", h.Get("RateLimit-Policy"), tt.wantPolicy)
				}
				q := param(t, h.Get("RateLimit-Policy"), "q")
				if r := param(t, h.Get("RateLimit"), "r"); r > q {
					t.Fatalf("after %d requests: RateLimit %q has r=%d above q=%d of %q", n, h.Get("RateLimit"), r, q, h.Get("RateLimit-Policy"))
				}
				if got := h.Get("X-RateLimit-Limit"); got != strconv.Itoa(q) {
					t.Fatalf("after %d requests: X-RateLimit-Limit = %s, want q=%d", n, got, q)
				}
			}
		})
	}
}

// param reads the integer parameter name of a one-member RateLimit or RateLimit-Policy field.
func param(t *testing.T, field, name string) int {
	t.Helper()
	for _, p := range strings.Split(field, ";")[1:] {
		if k, v, _ := strings.Cut(p, "="); k == name {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s in %q: %v", name, field, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", name, field)
	return 0
}

func TestRefillTime(t *testing.T) {
	tests := []struct {
		name         string
		window       time.Duration
		burst, limit int
		want         time.Duration
	}{
		{"exact", time.Second, 199, 100, 1990 * time.Millisecond},
		{"rounded up to the nanosecond", time.Second, 1, 3, 333_333_334},
		{"beyond 64 bits before dividing", 30 * 24 * time.Hour, 1 << 40, 1 << 30, 30 * 24 * time.Hour << 10},
		{"longer than a Duration", 30 * 24 * time.Hour, 1 << 40, 2, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := refillTime(tt.window, tt.burst, tt.limit); got != tt.want {
				t.Errorf("refillTime(%v, %d, %d) = %v, want %v", tt.window, tt.burst, tt.limit, got, tt.want)
			}
		})
	}
}
