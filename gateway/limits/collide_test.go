package limits

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/clock"
)

// collideDoc has every source of rule ids at once: limits keyed like the plan rules (by
// tenant), plans with an api rate and a quota, and tenant overrides for every route and for
// one, so that a clash between a limit, a plan and an override would show.
const collideDoc = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: events, match: {method: GET, path: /partner/v1/events}, service: svc, auth: apikey, limits: [per-tenant, per-key, per-ip]}
  - {id: holds, match: {method: POST, path: /partner/v1/holds}, service: svc, auth: optional, limits: [per-tenant, per-user]}
  - {id: open, match: {method: GET, path: /open}, service: svc, auth: none}
limits:
  - {id: per-tenant, key: tenant, rate: 100/1m}
  - {id: per-key, key: apikey, rate: 100/1m}
  - {id: per-ip, key: ip, rate: 100/1m}
  - {id: per-user, key: user, rate: 100/1m}
plans:
  free: {api: 60/1m}
  partner: {api: 10000/1m, quota: 1000000/30d}
  internal: unlimited
`

// TestBuildNamesEachRuleAndKeyOnce: whatever route and caller, a policy that compiled builds
// requests the limiter takes, each rule and key named once (the limiter refuses a request
// naming one twice, and the gateway would answer 500).
func TestBuildNamesEachRuleAndKeyOnce(t *testing.T) {
	p, err := policy.Parse([]byte(collideDoc))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := policy.Compile(p, []policy.TenantRule{
		{Tenant: "ten_a", Route: policy.AllRoutes, Capacity: 50, RefillPerSecond: 1},
		{Tenant: "ten_a", Route: "holds", Capacity: 5, RefillPerSecond: 1},
		{Tenant: "ten_b", Route: "events", Capacity: 5, RefillPerSecond: 1},
	})
	if err != nil || len(snap.Skipped) > 0 {
		t.Fatalf("Compile = %v, skipped %v; want the policy and every override", err, snap.Skipped)
	}
	callers := map[string]authn.Caller{"anonymous": {}}
	for _, plan := range []string{"free", "partner", "internal", "unknown"} {
		for _, tenant := range []string{"ten_a", "ten_b", "ten_c"} {
			c := authn.Caller{KeyID: "key_" + tenant}
			c.Tenant, c.Plan, c.User = tenant, plan, "usr_"+tenant
			callers[plan+" "+tenant] = c
		}
	}
	e := NewEnforcer(ratelimit.NewMemory(clock.Clock{}), nil, nil)
	for _, route := range snap.Routes() {
		for name, c := range callers {
			t.Run(route.ID+"/"+name, func(t *testing.T) {
				r := httptest.NewRequest("GET", "/", strings.NewReader(`{}`))
				out, err := Build(snap, Subject{Route: route, Caller: c, IP: netip.MustParseAddr("203.0.113.9"), Request: r})
				reqs := out.Requests
				if err != nil {
					t.Fatalf("Build() = %v, want no error", err)
				}
				seen := map[built]bool{}
				for _, b := range summary(reqs) {
					if seen[b] {
						t.Errorf("Build() = %v: %v named twice", summary(reqs), b)
					}
					seen[b] = true
				}
				if _, err := e.Decide(context.Background(), reqs); err != nil {
					t.Errorf("Decide(Build()) = %v, want a decision", err)
				}
			})
		}
	}
}
