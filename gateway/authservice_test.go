package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/auth"
)

// startAuth runs the real auth service in-process with its demo fans and tenants, and
// returns its HTTP base URL and gRPC address.
func startAuth(t *testing.T, natsURL string) (string, string) {
	t.Helper()
	httpAddr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	env := map[string]string{"HTTP_ADDR": httpAddr, "GRPC_ADDR": grpcAddr, "DATA_DIR": t.TempDir(),
		"NATS_URL": natsURL, "SEED_DEMO": "true", "LOG_LEVEL": "error"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- auth.Run(ctx, nil, func(k string) string { return env[k] }, io.Discard, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("auth Run() did not return within 15s of cancel")
		}
	})
	testkit.Eventually(t, 30*time.Second, "auth ready", func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return "http://" + httpAddr, grpcAddr
}

const authPolicy = `
services:
  - {name: auth, instances: ["AUTHURL"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
  - {name: echo, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: login, match: {method: POST, path: /v1/auth/login}, service: auth, auth: none, limits: [login-per-account], retry: false}
  - {id: me, match: {method: GET, path: /v1/me}, service: echo, auth: user}
  - {id: partner, match: {method: GET, path: /partner/v1/things}, service: echo, auth: apikey, strip_prefix: /partner}
  - {id: internal, match: {method: GET, path: /v1/admin/things}, service: echo, auth: apikey, plans: [internal]}
limits:
  - {id: login-per-account, key: "json:email", rate: 3/1m, burst: 3, on_store_failure: closed}
plans:
  free: {api: 60/1m}
  partner: {api: 10000/1m, quota: 1000000/30d}
  internal: unlimited
`

// TestWithTheAuthService puts the real auth service behind and beside the gateway: a fan
// logs in through the gateway and calls a user route with the token; partner API keys are
// resolved over gRPC to tenants and plans; a per-tenant override written to the
// rate_limit_rule table takes effect on the NATS event.
func TestWithTheAuthService(t *testing.T) {
	ns := testkit.StartNATS(t)
	authURL, authGRPC := startAuth(t, ns.ClientURL())
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, strings.ReplaceAll(authPolicy, "AUTHURL", authURL), be, map[string]string{
		"REDIS_URL": rd.URL(), "NATS_URL": ns.ClientURL(), "AUTH_URL": authURL, "AUTH_GRPC_ADDR": authGRPC,
		"RATE_LIMIT_RULE_REFRESH": "1h", // only the event can bring the override in time
	})

	// Log in through the gateway, then use the token.
	res := gw.call(t, "POST", "/v1/auth/login", `{"email":"fan0001@boxoffice.test","password":"`+auth.DemoPassword+`"}`)
	var pair struct {
		AccessToken string `json:"access_token"`
	}
	if res.status != 200 || json.Unmarshal(res.body, &pair) != nil || pair.AccessToken == "" {
		t.Fatalf("login through the gateway = %d %s, want 200 with a token", res.status, res.body)
	}
	me := gw.call(t, "GET", "/v1/me", "", "Authorization", "Bearer "+pair.AccessToken, identity.HeaderUser, "usr_someone_else").seen(t)
	if !strings.HasPrefix(me.Identity.User, "usr_") || me.Identity.User == "usr_someone_else" {
		t.Errorf("upstream saw user %q, want the token's usr_ id", me.Identity.User)
	}

	// Guessing one account's password is cut off per account, whatever the IP.
	var codes []int
	for range 4 {
		codes = append(codes, gw.call(t, "POST", "/v1/auth/login", `{"email":"FAN0002@boxoffice.test ","password":"guess"}`).status)
	}
	if want := []int{401, 401, 401, 429}; !equalInts(codes, want) {
		t.Errorf("four wrong passwords for one account = %v, want %v", codes, want)
	}

	// API keys, resolved by the auth service.
	key := func(tenant string) string { return auth.DemoAPIKey("boxoffice-demo", tenant) }
	partner := gw.call(t, "GET", "/partner/v1/things", "", "X-Api-Key", key("ticketsrus"))
	if s := partner.seen(t); s.Path != "/v1/things" || s.Identity != (identity.Identity{Tenant: "ten_demo_ticketsrus", Plan: "partner"}) {
		t.Errorf("partner call reached %s as %+v, want /v1/things as ten_demo_ticketsrus on partner", s.Path, s.Identity)
	}
	if got := partner.header.Get("RateLimit-Policy"); got != `"plan-partner-api";q=10000;w=60, "plan-partner-quota";q=1000000;w=2592000` {
		t.Errorf("partner RateLimit-Policy = %q, want the plan's api rate and monthly quota", got)
	}
	tests := []struct {
		name, path, key string
		status          int
	}{
		{"unknown key", "/partner/v1/things", "bo_live_nope", 401},
		{"free plan on an internal route", "/v1/admin/things", key("freebie"), 403},
		{"internal plan on an internal route", "/v1/admin/things", key("backstage"), 200},
	}
	for _, tt := range tests {
		res := gw.call(t, "GET", tt.path, "", "X-Api-Key", tt.key)
		if res.status != tt.status {
			t.Errorf("%s: GET %s = %d %s, want %d", tt.name, tt.path, res.status, res.body, tt.status)
		}
		if tt.status == 200 && res.header.Get("RateLimit") != "" {
			t.Errorf("%s: RateLimit = %q, want none on an unlimited plan", tt.name, res.header.Get("RateLimit"))
		}
	}

	// A per-tenant override in the table, announced on NATS.
	db, err := sqldb.Open(context.Background(), sqldb.Options{Service: "gateway", DataDir: filepath.Dir(gw.policyFile)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := policystore.NewTable(db, clock.Clock{}).Put(context.Background(), policy.TenantRule{Tenant: "ten_demo_ticketsrus", Route: "partner", Capacity: 2, RefillPerSecond: 0.01}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := nc.Publish(policystore.RulesChangedSubject, nil); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the tenant override applies", func() bool {
		res := gw.call(t, "GET", "/partner/v1/things", "", "X-Api-Key", key("ticketsrus"))
		return strings.HasPrefix(res.header.Get("RateLimit-Policy"), `"tenant-api.partner";q=36;w=3600`)
	})
	// The call that saw the override spent one of its two tokens.
	if res := gw.call(t, "GET", "/partner/v1/things", "", "X-Api-Key", key("ticketsrus")); res.status != 200 {
		t.Errorf("second call under a 2-token override = %d, want 200", res.status)
	}
	res = gw.call(t, "GET", "/partner/v1/things", "", "X-Api-Key", key("ticketsrus"))
	if res.status != http.StatusTooManyRequests || !strings.Contains(string(res.body), `"violated-policies":["tenant-api.partner"]`) {
		t.Errorf("third call under a 2-token override = %d %s, want 429 naming tenant-api.partner", res.status, res.body)
	}
}
