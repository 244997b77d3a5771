package gateway

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestPolicyChangesWithoutRestart changes the running policy through the file and through
// the admin API, and shows a bad file rejected with the field named while the policy runs on.
func TestPolicyChangesWithoutRestart(t *testing.T) {
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, testPolicy, be, map[string]string{"REDIS_URL": rd.URL()})
	limitOf := func() string { return gw.call(t, "GET", "/v1/search", "").header.Get("X-RateLimit-Limit") }
	if got := limitOf(); got != "3" {
		t.Fatalf("search limit = %q, want 3 from the file", got)
	}

	// The file.
	doc, err := os.ReadFile(gw.policyFile)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(doc), "{id: search-per-ip, key: ip, rate: 3/1m, burst: 3}", "{id: search-per-ip, key: ip, rate: 50/1m, burst: 50}", 1)
	if err := os.WriteFile(gw.policyFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the edited file's limit applies", func() bool { return limitOf() == "50" })

	bad := strings.Replace(edited, "service: echo, auth: none, limits: [search-per-ip]", "service: echo, auth: sometimes, limits: [search-per-ip]", 1)
	if err := os.WriteFile(gw.policyFile, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the bad file is reported", func() bool {
		_, body := gw.adminCall(t, "GET", "/admin/policy", "")
		return strings.Contains(body, "routes[search].auth")
	})
	if got := limitOf(); got != "50" {
		t.Errorf("search limit after a bad file = %q, want 50: the running policy stays", got)
	}

	// The admin API: a new limit, then shadow mode.
	if code, body := gw.adminCall(t, "PUT", "/admin/limits/search-per-ip", `{"key":"ip","rate":"2/1m","burst":2}`); code != 200 {
		t.Fatalf("PUT limit = %d %s", code, body)
	}
	var codes []int
	for range 3 {
		codes = append(codes, gw.call(t, "GET", "/v1/search", "").status)
	}
	if codes[2] != http.StatusTooManyRequests || limitOf() != "2" {
		t.Errorf("after PUT 2/1m: statuses %v and limit %q, want the third denied and limit 2", codes, limitOf())
	}
	if code, body := gw.adminCall(t, "PATCH", "/admin/limits/search-per-ip", `{"mode":"shadow"}`); code != 200 {
		t.Fatalf("PATCH mode = %d %s", code, body)
	}
	if res := gw.call(t, "GET", "/v1/search", ""); res.status != 200 {
		t.Errorf("after shadow mode, search = %d, want 200", res.status)
	}
	// The upstream knobs: a route's timeout and a service's concurrency limit.
	if code, body := gw.adminCall(t, "PATCH", "/admin/services/echo", `{"max_in_flight":5}`); code != 200 {
		t.Fatalf("PATCH service = %d %s", code, body)
	}
	if _, body := gw.adminCall(t, "GET", "/admin/upstreams", ""); !strings.Contains(body, `"maxInFlight":5`) {
		t.Errorf("GET /admin/upstreams = %s, want maxInFlight 5 applied to the pools", body)
	}
	if code, body := gw.adminCall(t, "PATCH", "/admin/services/echo", `{"max_in_flight":-1}`); code != 400 || !strings.Contains(body, "max_in_flight") {
		t.Errorf("PATCH a negative max_in_flight = %d %s, want 400 naming the field", code, body)
	}
	// An adaptive limit under that ceiling, and one without a ceiling refused.
	if code, body := gw.adminCall(t, "PATCH", "/admin/services/echo", `{"adaptive_concurrency":{"latency_target":"100ms","min_in_flight":2}}`); code != 200 {
		t.Fatalf("PATCH adaptive_concurrency = %d %s", code, body)
	}
	if _, body := gw.adminCall(t, "GET", "/admin/upstreams", ""); !strings.Contains(body, `"concurrencyLimit":5,"adaptive":true`) {
		t.Errorf("GET /admin/upstreams = %s, want an adaptive limit starting at max_in_flight 5", body)
	}
	if code, body := gw.adminCall(t, "PATCH", "/admin/services/echo", `{"max_in_flight":0}`); code != 400 || !strings.Contains(body, "max_in_flight") {
		t.Errorf("PATCH max_in_flight 0 under an adaptive limit = %d %s, want 400 naming max_in_flight", code, body)
	}
}
