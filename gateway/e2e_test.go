package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
)

// TestAuthModes runs each route auth mode against JWTs minted with auth's token package and
// served as a JWKS, as the auth service does.
func TestAuthModes(t *testing.T) {
	ks := newKeySet(t, "k1", "k2")
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "AUTH_URL": ks.URL})
	now := time.Now()
	good := ks.sign(t, "k1", "usr_ana", now, time.Minute)
	// A key rotated out of the JWKS: its token verifies while the key is published, and is
	// refused once the gateway's cache has refreshed (max-age is 1s here).
	old := ks.sign(t, "k2", "usr_ana", now, time.Minute)
	if res := gw.call(t, "GET", "/v1/me", "", "Authorization", "Bearer "+old); res.status != 200 {
		t.Fatalf("token of a published key = %d, want 200", res.status)
	}
	ks.remove("k2")
	testkit.Eventually(t, 5*time.Second, "a token of a rotated-out key is refused", func() bool {
		return gw.call(t, "GET", "/v1/me", "", "Authorization", "Bearer "+old).status == http.StatusUnauthorized
	})
	hits := be.hits.Load()
	expired := ks.sign(t, "k1", "usr_ana", now.Add(-10*time.Minute), 5*time.Minute)
	hs256 := forgeHS256(t, "k1", "usr_ana", now)
	forged := []string{identity.HeaderUser, "usr_admin", identity.HeaderTenant, "ten_demo_backstage", identity.HeaderPlan, "internal"}

	tests := []struct {
		name     string
		path     string
		header   []string
		status   int
		wantUser string
		// wantAuthz is the Authorization the upstream must see: a verified token is the
		// gateway's to consume, anything else passes as the client sent it.
		wantAuthz string
	}{
		{"user: valid token", "/v1/me", []string{"Authorization", "Bearer " + good}, 200, "usr_ana", ""},
		{"user: no token", "/v1/me", nil, 401, "", ""},
		{"user: expired token", "/v1/me", []string{"Authorization", "Bearer " + expired}, 401, "", ""},
		{"user: wrong alg (HS256 keyed with the public key)", "/v1/me", []string{"Authorization", "Bearer " + hs256}, 401, "", ""},
		{"user: forged identity headers alone", "/v1/me", forged, 401, "", ""},
		{"user: forged headers beside a valid token are replaced", "/v1/me", append([]string{"Authorization", "Bearer " + good}, forged...), 200, "usr_ana", ""},
		{"optional: anonymous", "/v1/optional", nil, 200, "", ""},
		{"optional: forged headers are stripped", "/v1/optional", forged, 200, "", ""},
		{"optional: a valid token identifies", "/v1/optional", []string{"Authorization", "Bearer " + good}, 200, "usr_ana", ""},
		{"optional: an expired token is refused", "/v1/optional", []string{"Authorization", "Bearer " + expired}, 401, "", ""},
		{"optional: another scheme is not the gateway's", "/v1/optional", []string{"Authorization", "Basic YW5hOnB3"}, 200, "", "Basic YW5hOnB3"},
		{"none: forged headers are stripped", "/v1/public", forged, 200, "", ""},
		{"none: an expired token is ignored, and passed on", "/v1/public", []string{"Authorization", "Bearer " + expired}, 200, "", "Bearer " + expired},
		{"apikey: no key", "/partner/v1/things", nil, 401, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := gw.call(t, "GET", tt.path, "", tt.header...)
			if res.status != tt.status {
				t.Fatalf("GET %s = %d %s, want %d", tt.path, res.status, res.body, tt.status)
			}
			if tt.status == 401 {
				if !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Bearer") && !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "ApiKey") {
					t.Errorf("WWW-Authenticate = %q, want a challenge", res.header.Get("WWW-Authenticate"))
				}
				return
			}
			seen := res.seen(t)
			if got := seen.Identity; got != (identity.Identity{User: tt.wantUser}) {
				t.Errorf("upstream saw identity %+v, want user %q only", got, tt.wantUser)
			}
			if seen.Authorization != tt.wantAuthz {
				t.Errorf("upstream saw Authorization %q, want %q", seen.Authorization, tt.wantAuthz)
			}
		})
	}
	passed := 0
	for _, tt := range tests {
		if tt.status == 200 {
			passed++
		}
	}
	if n := be.hits.Load() - hits; n != int64(passed) {
		t.Errorf("backend hits = %d, want %d: no refused request may reach it", n, passed)
	}
}

// forgeHS256 builds a token naming alg HS256, signed with HMAC keyed by garbage: the
// gateway must refuse it for its algorithm before looking at any key.
func forgeHS256(t *testing.T, kid, sub string, now time.Time) string {
	t.Helper()
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	unsigned := enc(map[string]any{"alg": "HS256", "typ": "JWT", "kid": kid}) + "." +
		enc(map[string]any{"sub": sub, "iss": "boxoffice-auth", "aud": "boxoffice", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()})
	m := hmac.New(sha256.New, []byte("whatever-the-attacker-likes"))
	m.Write([]byte(unsigned))
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// TestTooManyRequestsContract checks the 429 of design §5 field by field, and the budget
// fields on the allowed responses before it.
func TestTooManyRequestsContract(t *testing.T) {
	ks := newKeySet(t, "k1")
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	// The test's client is a trusted hop, so that its trace id is the one to find in the 429
	// and the access log (TestClientTraceContextOnlyThroughTrustedProxies).
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "AUTH_URL": ks.URL, "TRUSTED_PROXIES": "127.0.0.1"})
	bearer := "Bearer " + ks.sign(t, "k1", "usr_ana", time.Now(), time.Hour)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparent := "00-" + traceID + "-00f067aa0ba902b7-01"

	for i := range 5 {
		res := gw.call(t, "POST", "/v1/events/evt-1/holds", "{}", "Authorization", bearer, "Traceparent", traceparent)
		if res.status != 200 {
			t.Fatalf("hold %d = %d %s, want 200", i+1, res.status, res.body)
		}
		want := map[string]string{
			"RateLimit-Policy":      `"holds-per-account";q=5;w=60`,
			"X-RateLimit-Limit":     "5",
			"X-RateLimit-Remaining": strconv.Itoa(4 - i),
		}
		for k, v := range want {
			if got := res.header.Get(k); got != v {
				t.Errorf("hold %d: %s = %q, want %q", i+1, k, got, v)
			}
		}
		if !strings.HasPrefix(res.header.Get("RateLimit"), `"holds-per-account";r=`+strconv.Itoa(4-i)+";t=") {
			t.Errorf("hold %d: RateLimit = %q, want r=%d", i+1, res.header.Get("RateLimit"), 4-i)
		}
		if s := res.seen(t); !strings.Contains(s.Traceparent, traceID) {
			t.Errorf("hold %d: upstream traceparent %q, want trace %s propagated", i+1, s.Traceparent, traceID)
		}
	}
	res := gw.call(t, "POST", "/v1/events/evt-1/holds", "{}", "Authorization", bearer, "Traceparent", traceparent)
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("sixth hold = %d %s, want 429", res.status, res.body)
	}
	retry, err := strconv.Atoi(res.header.Get("Retry-After"))
	if err != nil || retry < 11 || retry > 12 { // a token every 12s; a little time has passed
		t.Fatalf("Retry-After = %q, want 11 or 12", res.header.Get("Retry-After"))
	}
	r := strconv.Itoa(retry)
	want := map[string]string{
		"RateLimit-Policy":      `"holds-per-account";q=5;w=60`,
		"RateLimit":             `"holds-per-account";r=0;t=` + r,
		"X-RateLimit-Limit":     "5",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     r,
		"Content-Type":          "application/problem+json",
	}
	for k, v := range want {
		if got := res.header.Get(k); got != v {
			t.Errorf("429 %s = %q, want %q", k, got, v)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(res.body, &body); err != nil {
		t.Fatal(err)
	}
	wantBody := map[string]any{
		"type": "https://iana.org/assignments/http-problem-types#quota-exceeded", "title": "Too many requests",
		"status": 429.0, "detail": "holds-per-account allows 5 per 1m; retry in " + r + "s",
		"violated-policies": []any{"holds-per-account"}, "retryAfterSeconds": float64(retry), "traceId": traceID,
	}
	if got, want := mustJSON(body), mustJSON(wantBody); got != want {
		t.Errorf("429 body = %s, want %s", got, want)
	}
	if n := be.hits.Load(); n != 5 {
		t.Errorf("backend hits = %d, want 5", n)
	}
	// The limiter counts decisions by rule and outcome, on the gateway's /metrics.
	metrics := gw.metrics(t)
	found := false
	for _, line := range strings.Split(metrics, "\n") {
		found = found || strings.HasPrefix(line, "ratelimit_decisions_total{") &&
			strings.Contains(line, `outcome="denied"`) && strings.Contains(line, `rule="holds-per-account"`) && strings.HasSuffix(line, " 1")
	}
	if !found {
		t.Errorf("/metrics has no ratelimit_decisions_total of 1 denial by holds-per-account")
	}
	// The access log names the rule that decided, with the trace id.
	var denied map[string]any
	for _, l := range gw.accessLog(t) {
		if l["status"] == 429.0 {
			denied = l
		}
	}
	if denied == nil || denied["rule"] != "holds-per-account" || denied["outcome"] != "rate_limited" || denied["trace_id"] != traceID || denied["route"] != "holds" {
		t.Errorf("access log of the 429 = %v, want route holds, rule holds-per-account, outcome rate_limited, trace %s", denied, traceID)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestShadowRulesNeverBlock sends ten requests through a 1-per-minute shadow rule.
func TestShadowRulesNeverBlock(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL()})
	for i := range 10 {
		res := gw.call(t, "GET", "/v1/shadowed", "")
		if res.status != 200 || res.header.Get("RateLimit") != "" {
			t.Fatalf("request %d through a shadow rule = %d with RateLimit %q, want 200 without fields", i+1, res.status, res.header.Get("RateLimit"))
		}
	}
	would := 0
	for _, l := range gw.accessLog(t) {
		if l["route"] == "shadowed" && l["shadow_denied"] != nil {
			would++
		}
	}
	if would != 9 {
		t.Errorf("access log lines with shadow_denied = %d, want 9 (the first request fits the rule)", would)
	}
}

// TestResponseCostIsCharged shows the token-weighted quota: a request passes while budget
// is left, and the answer's X-Boxoffice-Tokens is charged after it.
func TestResponseCostIsCharged(t *testing.T) {
	ks := newKeySet(t, "k1")
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL(), "AUTH_URL": ks.URL})
	bearer := "Bearer " + ks.sign(t, "k1", "usr_ana", time.Now(), time.Hour)
	if res := gw.call(t, "POST", "/v1/assistant/ask", `{"question":"?"}`, "Authorization", bearer, "X-Test-Tokens", "600"); res.status != 200 {
		t.Fatalf("first question = %d, want 200", res.status)
	}
	// Each poll costs 1 token: remaining is 999 - polls until the charge lands, then 599 less.
	polls := 0
	testkit.Eventually(t, 5*time.Second, "600 tokens charged after the answer", func() bool {
		polls++
		res := gw.call(t, "POST", "/v1/assistant/ask", `{"question":"?"}`, "Authorization", bearer, "X-Test-Tokens", "1")
		left, _ := strconv.Atoi(res.header.Get("X-RateLimit-Remaining"))
		return res.status == 200 && left <= 1000-600-1
	})
	if polls >= 500 {
		t.Fatalf("remaining fell by polling alone (%d polls), not by the charge", polls)
	}
	// An answer worth more than what is left empties the budget: the next question is refused.
	gw.call(t, "POST", "/v1/assistant/ask", `{"question":"?"}`, "Authorization", bearer, "X-Test-Tokens", "900")
	testkit.Eventually(t, 5*time.Second, "the quota is exhausted", func() bool {
		return gw.call(t, "POST", "/v1/assistant/ask", `{"question":"?"}`, "Authorization", bearer).status == http.StatusTooManyRequests
	})
}

// TestEdgeSecurity: path tricks cannot skip a route's auth, the admin API is not on the
// public listener, bodies and headers are bounded.
func TestEdgeSecurity(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL()})
	tests := []struct {
		name, method, path string
		body               string
		header             []string
		status             int
		upstreamPath       string
	}{
		{"dot-dot into a protected route is that route", "GET", "/v1/public/../admin/things", "", nil, 401, ""},
		{"encoded dot-dot too", "GET", "/v1/public/%2e%2e/admin/things", "", nil, 401, ""},
		{"double slashes are cleaned", "GET", "//v1//public", "", nil, 200, "/v1/public"},
		{"encoded slash is refused", "GET", "/v1%2Fpublic", "", nil, 400, ""},
		{"strip prefix", "GET", "/partner/v1/things", "", nil, 401, ""},
		{"no route", "GET", "/v1/nothing", "", nil, 404, ""},
		{"wrong method", "DELETE", "/v1/public", "", nil, 405, ""},
		{"admin API is not public", "GET", "/admin/limits", "", []string{"Authorization", "Bearer " + adminToken}, 404, ""},
		{"metrics are not public", "GET", "/metrics", "", nil, 404, ""},
		{"fault injection is not public", "PUT", "/control", `{"outage":true}`, nil, 404, ""},
		{"dot-dot is cleaned, not redirected", "GET", "/v1/nothing/../public", "", nil, 200, "/v1/public"},
		{"body over the limit", "POST", "/v1/auth/login", strings.Repeat("x", 2<<20), nil, 413, ""},
		{"headers over the limit", "GET", "/v1/public", "", []string{"X-Big", strings.Repeat("x", 100<<10)}, 431, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, tt.method, gw.base+tt.path, tt.body, tt.header...)
			if res.status != tt.status {
				t.Fatalf("%s %s = %d %.200s, want %d", tt.method, tt.path, res.status, res.body, tt.status)
			}
			if tt.upstreamPath != "" {
				if got := res.seen(t).Path; got != tt.upstreamPath {
					t.Errorf("upstream path = %q, want %q", got, tt.upstreamPath)
				}
			}
		})
	}
	// The gateway's own metrics count routes by id.
	metrics := gw.metrics(t)
	for _, want := range []string{`gateway_requests_total{code="200",method="GET",route="public"}`, `gateway_rejections_total{reason="unauthorized",route="internal"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// The gateway's own limit on bodies is the policy's, above the platform's 1 MiB as well as
// below it: a body under max_body_bytes reaches the service whole, one over it is a 413.
func TestBodyLimitIsThePolicys(t *testing.T) {
	be := newBackend(t)
	gw := startGateway(t, `
settings: {max_body_bytes: 3145728}
services:
  - {name: echo, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: upload, match: {method: POST, path: /v1/upload}, service: echo, auth: none}
`, be, nil)
	res := gw.call(t, "POST", "/v1/upload", strings.Repeat("x", 2<<20))
	var got seen
	if err := json.Unmarshal(res.body, &got); res.status != 200 || err != nil || len(got.Body) != 2<<20 {
		t.Errorf("2 MiB under a 3 MiB limit = %d, %d bytes upstream (%v); want 200, %d", res.status, len(got.Body), err, 2<<20)
	}
	res = gw.call(t, "POST", "/v1/upload", strings.Repeat("x", 4<<20))
	if res.status != 413 || res.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("4 MiB over a 3 MiB limit = %d %s, want 413 application/problem+json", res.status, res.header.Get("Content-Type"))
	}
}

// What the public listener does not serve, the admin listener does: the metrics without the
// token (a scraper reads them), the fault-injection hook only with it.
func TestAdminListenerServesMetricsAndControl(t *testing.T) {
	be := newBackend(t)
	gw := startGateway(t, testPolicy, be, nil)
	if res := do(t, "PUT", gw.admin+"/control", `{"outage":true}`); res.status != 401 {
		t.Errorf("PUT admin /control without the token = %d, want 401", res.status)
	}
	if res := gw.call(t, "GET", "/v1/public", ""); res.status != 200 {
		t.Fatalf("GET /v1/public = %d, want 200 (no outage injected)", res.status)
	}
	want := `gateway_requests_total{code="200",method="GET",route="public"} 1`
	if res := do(t, "GET", gw.admin+"/metrics", ""); res.status != 200 || !strings.Contains(string(res.body), want) {
		t.Errorf("GET admin /metrics without the token = %d, want 200 with %s", res.status, want)
	}
	if res := do(t, "PUT", gw.admin+"/control", `{"outage":true}`, "Authorization", "Bearer "+adminToken); res.status != 200 {
		t.Errorf("PUT admin /control with the token = %d, want 200", res.status)
	}
	if res := gw.call(t, "GET", "/v1/public", ""); res.status != 503 {
		t.Errorf("GET /v1/public during an injected outage = %d, want 503", res.status)
	}
}

// A body with no declared length that runs past max_body_bytes is refused while it streams:
// a 413 that the gateway counts as its own rejection, not as the service's answer.
func TestStreamedBodyOverTheLimitIsARejection(t *testing.T) {
	be := newBackend(t)
	gw := startGateway(t, testPolicy, be, nil)
	chunked := io.MultiReader(strings.NewReader(`{"email":"ana@example.org","password":"`), strings.NewReader(strings.Repeat("x", 2<<20)))
	req, err := http.NewRequest("POST", gw.base+"/v1/auth/login", chunked) // no length: sent chunked
	if err != nil {
		t.Fatal(err)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("2 MiB chunked over a 1 MiB limit = %d %s, want 413 application/problem+json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	want := `gateway_rejections_total{reason="body_too_large",route="login"} 1`
	if m := gw.metrics(t); !strings.Contains(m, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
