package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/testkit"
)

// preLimitPolicy allows each address 3 requests at once and 2 a second, before a route with
// a limit of its own and one that needs a user.
const preLimitPolicy = `
settings: {local_ip_limit: {rate: 2/s, burst: 3}}
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: open, match: {method: GET, path: /v1/open}, service: svc, auth: none, limits: [wide]}
  - {id: me, match: {method: GET, path: /v1/me}, service: svc, auth: user}
limits:
  - {id: wide, key: ip, rate: 1000/s}
`

// countingLimiter counts the calls that reach the shared limiter.
type countingLimiter struct {
	limits.Limiter
	calls atomic.Int64
}

func (c *countingLimiter) Allow(ctx context.Context, reqs []ratelimit.Request) (ratelimit.Result, error) {
	c.calls.Add(1)
	return c.Limiter.Allow(ctx, reqs)
}

// TestLimitLocally runs the pre-limit on a clock the test moves: per address, before the
// shared limiter and before authentication, with the 429 of any limit, loopback exempt, and
// following the policy when it changes.
func TestLimitLocally(t *testing.T) {
	fake := testkit.NewClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 0)
	live := liveOf(t, preLimitPolicy)
	reader := sdkmetric.NewManualReader()
	m, err := newMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	shared := &countingLimiter{Limiter: ratelimit.NewMemory(fake.Clock())}
	var last forwarded
	g := &gateway{
		live: live, auth: &authn.Authenticator{}, enforcer: limits.NewEnforcer(shared, nil, nil),
		local: ratelimit.NewMemory(fake.Clock()), upstream: &recordingForwarder{last: &last},
		log: logging.Discard(), metrics: m, now: fake.Now, newTrace: randomTrace,
	}
	h := g.handler()
	call := func(addr, path string, header ...string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = addr
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	const flood = "192.0.2.7:41000"

	for i := range 3 {
		if w := call(flood, "/v1/open"); w.Code != http.StatusNoContent {
			t.Fatalf("request %d within the burst = %d %s, want 204", i+1, w.Code, w.Body)
		}
	}
	w := call(flood, "/v1/open")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("fourth request = %d %s, want 429", w.Code, w.Body)
	}
	// The client contract of every limit: a bucket of 3 refilled 2 a second advertises
	// q=3 over the 1.5s it takes to refill (w rounds up), and a token comes in 500ms.
	want := map[string]string{
		"Retry-After":      "1",
		"RateLimit-Policy": `"local-per-ip";q=3;w=2`,
		"RateLimit":        `"local-per-ip";r=0;t=1`,
		"Content-Type":     "application/problem+json",
	}
	for k, v := range want {
		if got := w.Header().Get(k); got != v {
			t.Errorf("429 %s = %q, want %q", k, got, v)
		}
	}
	var body limits.TooMany
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.ViolatedPolicies) != 1 || body.ViolatedPolicies[0] != "local-per-ip" || body.Detail != "local-per-ip allows 2 per 1s; retry in 1s" {
		t.Errorf("429 body = %+v, want local-per-ip named", body)
	}
	// Cut before authentication: a forged token gets the 429, not a 401 that would have
	// cost a verification.
	if w := call(flood, "/v1/me", "Authorization", "Bearer forged"); w.Code != http.StatusTooManyRequests {
		t.Errorf("forged token over the pre-limit = %d, want 429", w.Code)
	}
	if n := shared.calls.Load(); n != 3 {
		t.Errorf("shared limiter calls = %d, want 3: what the pre-limit refuses never reaches it", n)
	}

	// Per address: another one has its own bucket; loopback is never counted.
	if w := call("198.51.100.1:5000", "/v1/open"); w.Code != http.StatusNoContent {
		t.Errorf("another address = %d, want 204", w.Code)
	}
	for _, lo := range []string{"127.0.0.1:5000", "[::1]:5000"} {
		for i := range 10 {
			if w := call(lo, "/v1/open"); w.Code != http.StatusNoContent {
				t.Fatalf("loopback %s request %d = %d, want 204", lo, i+1, w.Code)
			}
		}
	}

	// A token every 500ms.
	fake.Advance(500 * time.Millisecond)
	if w := call(flood, "/v1/open"); w.Code != http.StatusNoContent {
		t.Errorf("after 500ms = %d, want 204", w.Code)
	}
	if w := call(flood, "/v1/open"); w.Code != http.StatusTooManyRequests {
		t.Errorf("second request after 500ms = %d, want 429", w.Code)
	}

	// Counted with the limiter's decisions, on path memory.
	if got, want := localDecisions(t, reader), map[string]int64{"allowed": 5, "denied": 3}; got["allowed"] != want["allowed"] || got["denied"] != want["denied"] {
		t.Errorf("ratelimit.decisions{rule=local-per-ip, path=memory} = %v, want %v", got, want)
	}

	// The setting follows the policy: off, the flood's address passes at once.
	if err := live.ReplaceFileData([]byte(strings.Replace(preLimitPolicy, "{rate: 2/s, burst: 3}", "off", 1))); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if w := call(flood, "/v1/open"); w.Code != http.StatusNoContent {
			t.Fatalf("request %d with the pre-limit off = %d %s, want 204", i+1, w.Code, w.Body)
		}
	}
}

// localDecisions reads the pre-limit's counts by outcome from reader.
func localDecisions(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			sum, ok := mt.Data.(metricdata.Sum[int64])
			if mt.Name != "ratelimit.decisions" || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				rule, _ := dp.Attributes.Value(attribute.Key("rule"))
				path, _ := dp.Attributes.Value(attribute.Key("path"))
				outcome, _ := dp.Attributes.Value(attribute.Key("outcome"))
				if rule.AsString() == "local-per-ip" && path.AsString() == "memory" {
					out[outcome.AsString()] += dp.Value
				}
			}
		}
	}
	return out
}
