package policy

import (
	"maps"
	"regexp"
	"slices"

	"boxoffice.dev/gateway/ratelimit"
)

// Global makes a limit one limit across every region of a deployment rather than one per
// region, decided as Mode says (ratelimit.GlobalMode; docs/lessons/distributed.md, "One
// limit, two regions", weighs the four). A gateway without REGION runs it as an ordinary
// limit: one Redis is already one limit. In YAML:
//
//	global: {mode: static, shares: {eu: 70, us: 30}}
type Global struct {
	// Mode is home, static, demand or approximate (which needs the limit's sync).
	Mode string `yaml:"mode" json:"mode"`
	// Shares are each region's percent of the limit, summing to 100: static's split, and
	// demand's until the first rebalance; home and approximate ignore them.
	Shares map[string]int `yaml:"shares" json:"shares,omitempty"`
}

// ValidRegion reports whether s can name a region: lowercase letters, digits and dashes,
// at most 63, as REGION and a global limit's shares spell it (eu, us-east-1).
func ValidRegion(s string) bool { return regionName.MatchString(s) }

var regionName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// validateGlobal checks the region names of a limit's global shares; the rate limiter's
// rule validation checks the rest (mode, percents, what a global limit combines with).
func validateGlobal(field func(string) string, g *Global) error {
	if g == nil {
		return nil
	}
	for _, region := range slices.Sorted(maps.Keys(g.Shares)) {
		if !ValidRegion(region) {
			return fieldErr(field("global.shares"), "%q: want a region: lowercase letters, digits and dashes", region)
		}
	}
	return nil
}

// globalRule is the rate limiter's Global for g; nil for nil.
func globalRule(g *Global) *ratelimit.Global {
	if g == nil {
		return nil
	}
	return &ratelimit.Global{Mode: ratelimit.GlobalMode(g.Mode), Shares: maps.Clone(g.Shares)}
}

// CheckRegion reports a limit of p that a gateway in region could not decide: a static or
// demand global limit without a share for it. A gateway with REGION refuses such a policy,
// since every request that spends the limit would fail.
func (p *Policy) CheckRegion(region string) error {
	for _, l := range p.Limits {
		g := l.Global
		if g == nil || g.Mode != string(ratelimit.GlobalStatic) && g.Mode != string(ratelimit.GlobalDemand) {
			continue
		}
		if _, ok := g.Shares[region]; !ok {
			return fieldErr("limits["+l.ID+"].global.shares", "no share for region %q, where this gateway runs (REGION)", region)
		}
	}
	return nil
}
