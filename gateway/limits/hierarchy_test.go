package limits

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/clock"
)

// tiersDoc is a hierarchy platform → plan → tenant → user on one route, which lists the leaf.
const tiersDoc = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: events, match: {method: GET, path: /v1/events}, service: svc, auth: optional, limits: [per-user]}
limits:
  - {id: platform, key: global, rate: 10/1m}
  - {id: per-plan, key: plan, rate: 6/1m, parent: platform, ceiling: 10/1m, reserve: 1}
  - {id: per-tenant, key: tenant, rate: 2/1m, parent: per-plan, ceiling: 4/1m}
  - {id: per-user, key: user, rate: 2/1m, parent: per-tenant, ceiling: 4/1m}
plans:
  free: {api: 60/1m}
  partner: {api: 10000/1m}
`

// TestBuildPutsTheChainIn: a route listing a leaf spends its whole chain, each level by its
// own key; a level whose parent does not count the caller is decided alone.
func TestBuildPutsTheChainIn(t *testing.T) {
	snap := compileDoc(t, tiersDoc)
	partner := authn.Caller{KeyID: "abcd"}
	partner.User, partner.Tenant, partner.Plan = "usr_1", "ten_p", "partner"
	user := authn.Caller{}
	user.User = "usr_2"
	tests := []struct {
		name       string
		caller     authn.Caller
		want       []built
		userParent string
	}{
		{"partner: the whole chain", partner, []built{{"per-user", "user:usr_1"}, {"per-tenant", "tenant:ten_p"},
			{"per-plan", "plan:partner"}, {"platform", "global:all"}, {"plan-partner-api", "tenant:ten_p"}}, "per-tenant"},
		{"no tenant: the user's level alone, and the platform", user, []built{{"per-user", "user:usr_2"}, {"platform", "global:all"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/events", nil)
			b, err := Build(snap, Subject{Route: snap.Route("events"), Caller: tt.caller, IP: netip.MustParseAddr("203.0.113.9"), Request: r})
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(b.Requests); !slices.Equal(got, tt.want) {
				t.Errorf("Build() = %v, want %v", got, tt.want)
			}
			if got := b.Requests[0].Rule.Level.Parent; got != tt.userParent {
				t.Errorf("per-user's parent = %q, want %q", got, tt.userParent)
			}
			if _, err := decideErr(b.Requests); err != nil {
				t.Errorf("the limiter refuses the built requests: %v", err)
			}
		})
	}
}

// TestTooManyNamesTheLevel: a user past its share borrows up to its ceiling of 4; the fifth
// request is refused by the user's level, whose 429 and headers show the ceiling.
func TestTooManyNamesTheLevel(t *testing.T) {
	snap := compileDoc(t, tiersDoc)
	partner := authn.Caller{KeyID: "abcd"}
	partner.User, partner.Tenant, partner.Plan = "usr_1", "ten_p", "partner"
	b, err := Build(snap, Subject{Route: snap.Route("events"), Caller: partner, Request: httptest.NewRequest("GET", "/v1/events", nil)})
	if err != nil {
		t.Fatal(err)
	}
	res := decide(t, b.Requests, 5)
	if res.Allowed || res.Rule != "per-user" || !res.Borrowing {
		t.Fatalf("fifth request: allowed %v by %s, borrowing %v; want denied by per-user at its ceiling", res.Allowed, res.Rule, res.Borrowing)
	}
	w := httptest.NewRecorder()
	WriteTooMany(w, b.Requests, res, "")
	var body TooMany
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if want := "per-user allows 4 per 1m with what it borrows; retry in 15s"; body.Detail != want {
		t.Errorf("detail = %q, want %q", body.Detail, want)
	}
	if got, want := w.Header().Get("X-RateLimit-Limit"), "4"; got != want {
		t.Errorf("X-RateLimit-Limit = %q, want %q (the ceiling)", got, want)
	}
	// Four spent through every level: the plan has 2 of its 6 left, the platform 6 of 10.
	if got, want := w.Header().Get("RateLimit"), `"per-plan";r=2;t=40, "platform";r=6;t=24`; !strings.Contains(got, want) {
		t.Errorf("RateLimit = %q, want it to hold %q", got, want)
	}
}

// decideErr asks a memory limiter once.
func decideErr(reqs []ratelimit.Request) (ratelimit.Result, error) {
	return ratelimit.NewMemory(clock.Clock{}).Allow(context.Background(), reqs)
}

// TestUnchainKeepsOneChildPerParent: of two levels under one parent in one call, the second
// is decided alone, so the limiter accepts the call.
func TestUnchainKeepsOneChildPerParent(t *testing.T) {
	snap := compileDoc(t, tiersDoc)
	user, tenant, plan := snap.Limit("per-user").Rule, snap.Limit("per-tenant").Rule, snap.Limit("per-plan").Rule
	other := tenant
	other.ID = "other-tenant"
	reqs := []ratelimit.Request{{Rule: user, Key: "user:1"}, {Rule: tenant, Key: "tenant:a"}, {Rule: other, Key: "tenant:b"}, {Rule: plan, Key: "plan:p"}}
	unchain(reqs)
	if got := reqs[2].Rule.Level.Parent; got != "" {
		t.Errorf("the second child's parent = %q, want none", got)
	}
	if got := reqs[1].Rule.Level.Parent; got != "per-plan" {
		t.Errorf("the first child's parent = %q, want per-plan", got)
	}
	if _, err := decideErr(reqs[:3]); err == nil {
		t.Errorf("Allow(without the plan) = nil error, want the missing parent refused")
	}
	if _, err := decideErr(append(reqs[:3:3], ratelimit.Request{Rule: snap.Limit("platform").Rule, Key: "global:all"}, reqs[3])); err != nil {
		t.Errorf("Allow(unchained) = %v, want none", err)
	}
	if snap.Limit("per-tenant").Rule.Level.Parent != "per-plan" {
		t.Errorf("unchain changed the policy's own rule")
	}
}
