package limits

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/testkit"
	"github.com/redis/go-redis/v9"
)

const doc = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: holds, match: {method: POST, path: "/v1/events/{id}/holds"}, service: svc, auth: user, limits: [holds-per-account, api-per-ip]}
  - {id: login, match: {method: POST, path: /v1/auth/login}, service: svc, auth: none, limits: [login-per-account, per-user-route]}
  - {id: ask, match: {method: POST, path: /v1/ask}, service: svc, auth: optional, limits: [tokens]}
limits:
  - {id: holds-per-account, key: user, rate: 5/1m, burst: 5}
  - {id: api-per-ip, key: ip, rate: 100/s, burst: 200}
  - {id: login-per-account, key: "json:email", rate: 5/1m, on_store_failure: closed}
  - {id: per-user-route, key: user+route, rate: 5/1m}
  - {id: tokens, key: ip, algorithm: fixed_window, rate: 1000/1d, cost_header: X-Boxoffice-Tokens}
plans:
  free: {api: 60/1m}
  partner: {api: 10000/1m, quota: 1000000/30d}
  internal: unlimited
`

func snapshot(t *testing.T, tenants ...policy.TenantRule) *policy.Snapshot {
	t.Helper()
	return compileDoc(t, doc, tenants...)
}

// compileDoc parses and compiles the policy text with tenants, failing the test on an error.
func compileDoc(t *testing.T, text string, tenants ...policy.TenantRule) *policy.Snapshot {
	t.Helper()
	p, err := policy.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	s, err := policy.Compile(p, tenants)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type built struct{ rule, key string }

func summary(reqs []ratelimit.Request) []built {
	var out []built
	for _, q := range reqs {
		out = append(out, built{q.Rule.ID, q.Key})
	}
	return out
}

func TestBuild(t *testing.T) {
	snap := snapshot(t, policy.TenantRule{Tenant: "ten_p", Route: "holds", Capacity: 7, RefillPerSecond: 1})
	ip := netip.MustParseAddr("203.0.113.9")
	user := authn.Caller{}
	user.User = "usr_1"
	partner := authn.Caller{KeyID: "abcd"}
	partner.Tenant, partner.Plan = "ten_p", "partner"
	internal := authn.Caller{}
	internal.Tenant, internal.Plan = "ten_i", "internal"
	odd := authn.Caller{}
	odd.Tenant, odd.Plan = "ten_o", "enterprise"
	tests := []struct {
		name   string
		route  string
		caller authn.Caller
		body   string
		want   []built
	}{
		{"user on holds", "holds", user, "", []built{{"holds-per-account", "user:usr_1"}, {"api-per-ip", "ip:203.0.113.9"}}},
		{"anonymous: per-user limits do not apply", "holds", authn.Caller{}, "", []built{{"api-per-ip", "ip:203.0.113.9"}}},
		{"login keyed by the email, folded and hashed", "login", authn.Caller{}, `{"email":" Ana@Example.org","password":"x"}`,
			[]built{{"login-per-account", "json:email:" + hashed("ana@example.org")}}},
		{"composite key: the first part is the hash tag", "login", user, `{}`, []built{{"per-user-route", "{user:usr_1}:route:login"}}},
		{"partner: the route override replaces the plan's api rate", "holds", partner, "",
			[]built{{"api-per-ip", "ip:203.0.113.9"}, {"tenant-api.holds", "tenant:ten_p"}, {"plan-partner-quota", "tenant:ten_p"}}},
		{"partner elsewhere: the plan's rates", "ask", partner, "",
			[]built{{"tokens", "ip:203.0.113.9"}, {"plan-partner-api", "tenant:ten_p"}, {"plan-partner-quota", "tenant:ten_p"}}},
		{"unlimited plan: nothing", "holds", internal, "", nil},
		{"unknown plan: the default plan", "ask", odd, "", []built{{"tokens", "ip:203.0.113.9"}, {"plan-free-api", "tenant:ten_o"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			built, err := Build(snap, Subject{Route: snap.Route(tt.route), Caller: tt.caller, IP: ip, Request: r})
			reqs := built.Requests
			if err != nil {
				t.Fatalf("Build() = %v, want no error", err)
			}
			if got := summary(reqs); !slices.Equal(got, tt.want) {
				t.Errorf("Build() = %v, want %v", got, tt.want)
			}
			// The body is still there for the upstream.
			if b, _ := io.ReadAll(r.Body); string(b) != tt.body {
				t.Errorf("body after Build = %q, want %q", b, tt.body)
			}
		})
	}
}

// decide runs n requests on a memory limiter at a fixed time and returns the last result.
func decide(t *testing.T, reqs []ratelimit.Request, n int) ratelimit.Result {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	m := ratelimit.NewMemory(clock.Func(func() time.Time { return now }))
	var res ratelimit.Result
	for range n {
		var err error
		if res, err = m.Allow(context.Background(), reqs); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func TestTooManyContract(t *testing.T) {
	snap := snapshot(t)
	holds := snap.Route("holds")
	reqs := []ratelimit.Request{
		{Rule: holds.Limits[0].Rule, Key: "user:usr_1"},
		{Rule: holds.Limits[1].Rule, Key: "ip:203.0.113.9"},
	}
	res := decide(t, reqs, 6) // 5 per minute: the sixth is denied, 12s until a token
	if res.Allowed {
		t.Fatalf("sixth request allowed, want denied")
	}
	w := httptest.NewRecorder()
	WriteTooMany(w, reqs, res, "4bf92f3577b34da6a3ce929d0e0e4736")
	want := map[string]string{
		"Retry-After":           "12",
		"RateLimit-Policy":      `"holds-per-account";q=5;w=60, "api-per-ip";q=200;w=2`, // 100/s, a burst of 200
		"RateLimit":             `"holds-per-account";r=0;t=12, "api-per-ip";r=195;t=1`,
		"X-RateLimit-Limit":     "5",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "12",
		"Content-Type":          "application/problem+json",
	}
	if w.Code != http.StatusTooManyRequests {
		t.Errorf("status = %d, want 429", w.Code)
	}
	for k, v := range want {
		if got := w.Header().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	wantBody := map[string]any{
		"type": QuotaExceeded, "title": "Too many requests", "status": 429.0,
		"detail":            "holds-per-account allows 5 per 1m; retry in 12s",
		"violated-policies": []any{"holds-per-account"}, "retryAfterSeconds": 12.0,
		"traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
	}
	if b, _ := json.Marshal(body); string(b) != mustJSON(wantBody) {
		t.Errorf("body = %s, want %s", b, mustJSON(wantBody))
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestAllowedHeaders(t *testing.T) {
	snap := snapshot(t)
	holds := snap.Route("holds")
	reqs := []ratelimit.Request{{Rule: holds.Limits[0].Rule, Key: "user:usr_1"}, {Rule: holds.Limits[1].Rule, Key: "ip:x"}}
	res := decide(t, reqs, 2)
	h := http.Header{}
	SetHeaders(h, reqs, res)
	// Closest to exhaustion: holds-per-account with 3 of 5 left, whole again in 24s.
	for k, v := range map[string]string{"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "3", "X-RateLimit-Reset": "24",
		"RateLimit": `"holds-per-account";r=3;t=24, "api-per-ip";r=198;t=1`} {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	shadow := reqs[0]
	shadow.Rule.Mode = ratelimit.Shadow
	h = http.Header{}
	SetHeaders(h, []ratelimit.Request{shadow}, decide(t, []ratelimit.Request{shadow}, 1))
	if len(h) != 0 {
		t.Errorf("headers for a shadow rule alone = %v, want none", h)
	}
}

func TestStoreUnavailable(t *testing.T) {
	res := ratelimit.Result{Rules: []ratelimit.Decision{
		{Rule: "login-per-account", Allowed: false, Path: ratelimit.PathFailClosed, RetryAfter: 1500 * time.Millisecond, Mode: ratelimit.Enforce},
		{Rule: "api-per-ip", Allowed: true, Path: ratelimit.PathFallback, Mode: ratelimit.Enforce},
	}}
	if !FailedClosed(res) {
		t.Fatalf("FailedClosed() = false, want true")
	}
	w := httptest.NewRecorder()
	WriteStoreUnavailable(w, res, "")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "2" || w.Header().Get("RateLimit") != "" {
		t.Errorf("WriteStoreUnavailable = %d, Retry-After %q, RateLimit %q; want 503, 2, none", w.Code, w.Header().Get("Retry-After"), w.Header().Get("RateLimit"))
	}
	res.Rules[0].Path = ratelimit.PathStore
	if FailedClosed(res) {
		t.Errorf("FailedClosed(denied by the store) = true, want false: that is a 429")
	}
}

// TestShadowRulesNeitherViolateNorFailClosed: with the store down, an enforced rule that
// denies sits next to a shadow rule that denies and a shadow fail-closed rule. The answer is
// a 429 naming only the enforced rule: a shadow rule only reports, so it neither appears in
// violated-policies nor turns the 429 into a 503.
func TestShadowRulesNeitherViolateNorFailClosed(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)), MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	now := time.Unix(1_800_000_000, 0)
	f, err := ratelimit.NewFailsafe(ratelimit.NewRedis(down), ratelimit.FailsafeOptions{Clock: clock.Func(func() time.Time { return now })})
	if err != nil {
		t.Fatal(err)
	}
	rule := func(id string, mode ratelimit.Mode, onFailure ratelimit.FailureMode) ratelimit.Request {
		return ratelimit.Request{Key: "user:usr_1", Rule: ratelimit.Rule{ID: id, Algorithm: ratelimit.FixedWindow,
			Limit: 1, Window: time.Minute, Mode: mode, OnStoreFailure: onFailure}}
	}
	reqs := []ratelimit.Request{
		rule("holds-per-account", ratelimit.Enforce, ratelimit.FailOpen),
		rule("holds-shadow", ratelimit.Shadow, ratelimit.FailOpen),
		rule("login-shadow", ratelimit.Shadow, ratelimit.FailClosed),
	}
	var res ratelimit.Result
	for range 2 { // a limit of one: the second request is denied
		if res, err = f.Allow(context.Background(), reqs); err != nil {
			t.Fatal(err)
		}
	}
	// The result holds what the test is about, so that it cannot pass for want of it.
	for i, wantPath := range []ratelimit.Path{ratelimit.PathFallback, ratelimit.PathFallback, ratelimit.PathFailClosed} {
		if d := res.Rules[i]; d.Allowed || d.Path != wantPath {
			t.Fatalf("rule %s = allowed %v on %q, want denied on %q", d.Rule, d.Allowed, d.Path, wantPath)
		}
	}
	if res.Allowed {
		t.Fatalf("second request allowed, want denied by holds-per-account")
	}
	if FailedClosed(res) {
		t.Errorf("FailedClosed() = true, want false: only a shadow rule failed closed")
	}
	w := httptest.NewRecorder()
	WriteTooMany(w, reqs, res, "")
	var body TooMany
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if want := []string{"holds-per-account"}; !slices.Equal(body.ViolatedPolicies, want) {
		t.Errorf("violated-policies = %q, want %q", body.ViolatedPolicies, want)
	}
}

func TestSettleChargesResponseCost(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := ratelimit.NewMemory(clock.Func(func() time.Time { return now }))
	e := NewEnforcer(m, nil, nil)
	rule := snapshot(t).Limit("tokens").Rule // 1000 per day
	q := ratelimit.Request{Rule: rule, Key: "ip:x"}
	ctx := context.Background()
	settle := func(tokens string) {
		res, err := e.Decide(ctx, []ratelimit.Request{q})
		if err != nil || !res.Allowed {
			t.Fatalf("Decide = %+v, %v; want allowed", res, err)
		}
		done := make(chan struct{})
		e.Settle(ctx, res, []Charge{{Request: q, Header: "X-Boxoffice-Tokens"}}, http.Header{"X-Boxoffice-Tokens": {tokens}}, func() { close(done) })
		<-done
	}
	settle("400") // 1 at the request, 399 after
	settle("700") // 1 + 599 left of 699: the rest of the budget is spent
	res, _ := m.Allow(ctx, []ratelimit.Request{q})
	if res.Allowed {
		t.Errorf("after answers worth 1100 tokens of 1000, the next request is allowed with %d left, want denied", res.Remaining)
	}
}

// A service's cost header is a number like any other from the network: however large, the
// budget ends up drained, never wrapped round to a fresh one. Two answers worth the most an
// int64 holds, to requests allowed before either was charged, add up past it.
func TestSettleBoundsAHugeCost(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := ratelimit.NewMemory(clock.Func(func() time.Time { return now }))
	e := NewEnforcer(m, nil, nil)
	q := ratelimit.Request{Rule: snapshot(t).Limit("tokens").Rule, Key: "ip:x"} // 1000 per day
	ctx := context.Background()
	var allowed []ratelimit.Result
	for range 2 {
		res, err := e.Decide(ctx, []ratelimit.Request{q})
		if err != nil || !res.Allowed {
			t.Fatalf("Decide = %+v, %v; want allowed", res, err)
		}
		allowed = append(allowed, res)
	}
	for _, res := range allowed {
		done := make(chan struct{})
		e.Settle(ctx, res, []Charge{{Request: q, Header: "X-Boxoffice-Tokens"}}, http.Header{"X-Boxoffice-Tokens": {"9223372036854775807"}}, func() { close(done) })
		<-done
	}
	if res, _ := m.Allow(ctx, []ratelimit.Request{q}); res.Allowed {
		t.Errorf("after two answers worth 2^63-1 tokens each of 1000, the next request is allowed with %d left, want denied", res.Remaining)
	}
}

// TestSetHeadersFieldSyntax checks the Structured Fields SetHeaders writes for what the
// policies above do not show: a concurrency limit has a unit and no window, shadow rules are
// left out, and a name is a quoted, escaped string.
func TestSetHeadersFieldSyntax(t *testing.T) {
	conc := ratelimit.Rule{ID: "uploads", Algorithm: ratelimit.Concurrency, Limit: 4, Window: time.Minute}
	odd := ratelimit.Rule{ID: `a"b\c`, Algorithm: ratelimit.TokenBucket, Limit: 10, Window: time.Second}
	shadow := ratelimit.Rule{ID: "watch", Algorithm: ratelimit.TokenBucket, Limit: 1, Window: time.Minute, Mode: ratelimit.Shadow}
	reqs := []ratelimit.Request{{Rule: conc, Key: "user:1"}, {Rule: odd, Key: "user:1"}, {Rule: shadow, Key: "user:1"}}
	res := decide(t, reqs, 1)
	h := http.Header{}
	SetHeaders(h, reqs, res)
	want := map[string]string{
		"RateLimit-Policy":      `"uploads";q=4;qu="concurrent-requests", "a\"b\\c";q=10;w=1`,
		"RateLimit":             `"uploads";r=3;t=60, "a\"b\\c";r=9;t=1`,
		"X-RateLimit-Limit":     "4",
		"X-RateLimit-Remaining": "3",
		"X-RateLimit-Reset":     "60",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("SetHeaders: %s = %q, want %q", k, got, v)
		}
	}
}

func TestWindowReadsAsAPolicyWritesIt(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{time.Second, "1s"},
		{90 * time.Second, "1m30s"},
		{time.Minute, "1m"},
		{90 * time.Minute, "90m"},
		{time.Hour, "1h"},
		{36 * time.Hour, "36h"},
		{30 * 24 * time.Hour, "30d"},
		{1500 * time.Millisecond, "1.5s"},
	} {
		if got := window(tt.d); got != tt.want {
			t.Errorf("window(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
