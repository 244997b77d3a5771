package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/gateway/ratelimit"
)

// tiers is base with a three-level hierarchy (platform → plan → tenant) and a route that
// lists its leaf.
var tiers = strings.Replace(base, "\nlimits:\n", `
  - id: partner-api
    match: {method: GET, path: /v1/partner/events}
    service: inventory
    auth: apikey
    limits: [per-tenant]
limits:
  - {id: platform, key: global, rate: 1000/s}
  - {id: per-plan, key: plan, rate: 400/s, parent: platform, ceiling: 800/s, reserve: 40}
  - {id: per-tenant, key: tenant, rate: 100/s, parent: per-plan, ceiling: 300/s}
  - {id: other-tenant, key: tenant+route, rate: 100/s, parent: per-plan}
`, 1)

// TestCompileHierarchy: a route that lists a leaf gets its whole chain, leaf first; the
// ceiling is counted per the limit's window; a parent without a reserve gets a tenth of
// its capacity.
func TestCompileHierarchy(t *testing.T) {
	s := mustCompile(t, tiers)
	var ids []string
	for _, l := range s.Route("partner-api").Limits {
		ids = append(ids, l.ID)
	}
	if want := []string{"per-tenant", "per-plan", "platform"}; !slices.Equal(ids, want) {
		t.Errorf("partner-api limits = %v, want %v", ids, want)
	}
	tenant, plan, platform := s.Limit("per-tenant").Rule, s.Limit("per-plan").Rule, s.Limit("platform").Rule
	if got, want := *tenant.Level, (ratelimit.Level{Parent: "per-plan", Ceiling: 300}); got != want {
		t.Errorf("per-tenant level = %+v, want %+v", got, want)
	}
	if plan.Level.Reserve != 40 || platform.Level.Reserve != 100 {
		t.Errorf("reserves = plan %d platform %d, want 40 (set) and 100 (a tenth of 1000)", plan.Level.Reserve, platform.Level.Reserve)
	}
	if s.Limit("holds-per-account").Rule.Level != nil {
		t.Errorf("a flat limit has a level, want nil")
	}
}

// TestCompileHierarchyNamesTheField: each bad shape of a hierarchy is refused, naming the
// field as the YAML spells it.
func TestCompileHierarchyNamesTheField(t *testing.T) {
	tests := []struct {
		name, old, new, wantField string
	}{
		{"missing parent", "parent: per-plan, ceiling", "parent: nope, ceiling", "limits[per-tenant].parent"},
		{"cycle", "rate: 1000/s}", "rate: 1000/s, parent: per-tenant}", "limits[platform].parent"},
		{"ceiling below the rate", "ceiling: 300/s", "ceiling: 50/s", "limits[per-tenant].ceiling"},
		{"ceiling above the parent", "ceiling: 300/s", "ceiling: 900/s", "limits[per-tenant].ceiling"},
		{"ceiling above the root", "ceiling: 800/s", "ceiling: 1200/s", "limits[per-plan].ceiling"},
		{"rate above the parent's", "rate: 100/s, parent: per-plan}", "rate: 900/s, parent: per-plan}", "limits[other-tenant].rate"},
		{"ceiling without a parent", "rate: 1000/s}", "rate: 1000/s, ceiling: 2000/s}", "limits[platform].ceiling"},
		{"ceiling not whole per window", "ceiling: 300/s", "ceiling: 1/7ms", "limits[per-tenant].ceiling"},
		{"bad ceiling", "ceiling: 300/s", "ceiling: lots", "limits[per-tenant].ceiling"},
		{"fixed window level", "rate: 100/s, parent: per-plan, ceiling", "algorithm: fixed_window, rate: 100/s, parent: per-plan, ceiling", "limits[per-tenant].algorithm"},
		{"fixed window parent", "rate: 1000/s}", "algorithm: fixed_window, rate: 1000/s}", "limits[platform].algorithm"},
		{"lease on a level", "ceiling: 300/s}", "ceiling: 300/s, lease: 2}", "limits[per-tenant].lease"},
		{"shards on a parent", "rate: 1000/s}", "rate: 1000/s, shards: 2}", "limits[platform].shards"},
		{"shadow level", "ceiling: 300/s}", "ceiling: 300/s, mode: shadow}", "limits[per-tenant].mode"},
		{"queued level", "rate: 100/s, parent: per-plan, ceiling: 300/s}", "algorithm: gcra, rate: 100/s, parent: per-plan, ceiling: 300/s, queue: {size: 5, max_delay: 1s}}", "limits[per-tenant].queue.max_delay"},
		{"partially enforced level", "ceiling: 300/s}", "ceiling: 300/s, mode: partial, enforce_percent: 30}", "limits[per-tenant].mode"},
		{"failure modes differ", "ceiling: 300/s}", "ceiling: 300/s, on_store_failure: closed}", "limits[per-tenant].on_store_failure"},
		{"cost header on a parent", "reserve: 40}", "reserve: 40, cost_header: X-Cost}", "limits[per-plan].cost_header"},
		{"negative reserve", "reserve: 40", "reserve: -1", "limits[per-plan].reserve"},
		{"reserve of the whole capacity", "reserve: 40", "reserve: 400", "limits[per-plan].reserve"},
		{"two children of one parent on a route", "limits: [per-tenant]", "limits: [per-tenant, other-tenant]", "routes[partner-api].limits[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(tiers, tt.old, tt.new, 1)
			if doc == tiers {
				t.Fatalf("case does not change the policy: %q not found", tt.old)
			}
			p, err := Parse([]byte(doc))
			if err == nil {
				_, err = Compile(p, nil)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Errorf("Compile() = %v, want an error naming %s", err, tt.wantField)
			}
		})
	}
}
