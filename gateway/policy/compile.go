package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

// Snapshot is a validated policy compiled for the request path: routes behind a matcher,
// limits as rate limiter rules, plans and per-tenant overrides by name. It is read-only once
// built, so any number of requests may read it at once.
type Snapshot struct {
	// Policy is the document the snapshot was compiled from, defaults applied. Read-only.
	Policy *Policy
	// Tenants are the per-tenant overrides in force (from the rate_limit_rule table).
	Tenants []TenantRule
	// Skipped names the tenant overrides left out because they do not validate.
	Skipped []string

	routes    []*CompiledRoute
	byID      map[string]*CompiledRoute
	router    router
	limits    map[string]*CompiledLimit
	plans     map[string]*CompiledPlan
	overrides map[string]map[string]ratelimit.Rule // tenant → route id or "*" → rule
	localIP   *ratelimit.Rule                      // settings.local_ip_limit; nil when off
}

// CompiledRoute is a route with its limits resolved and its defaults applied.
type CompiledRoute struct {
	Route
	Limits                          []*CompiledLimit
	ConnectTimeout, ResponseTimeout time.Duration
	Retry                           bool
	// Mutations and Queries are the routes whose limits a mapped root field of a GraphQL
	// operation spends, by field name; Cost weighs its operations, nil when it does not.
	// All nil when the route is not a GraphQL one (Route.GraphQL).
	Mutations, Queries map[string]*CompiledRoute
	Cost               *CompiledCost
}

// CompiledLimit is a limit with its rule and key parsed.
type CompiledLimit struct {
	Limit
	Rule ratelimit.Rule
	Key  []KeyPart
}

// CompiledPlan is a plan's rules, each keyed by tenant; nil when the plan has none.
type CompiledPlan struct {
	Name      string
	Unlimited bool
	// API is the rate across all routes (a token bucket); a tenant override replaces it.
	API *ratelimit.Rule
	// Quota is the long-window allowance (a fixed window).
	Quota *ratelimit.Rule
}

// TenantRule is one row of the rate_limit_rule table: a token bucket of Capacity refilled at
// RefillPerSecond that replaces the plan's api rate for Tenant on Route ("*" = every route).
type TenantRule struct {
	Tenant          string    `json:"tenant"`
	Route           string    `json:"route"`
	Capacity        int       `json:"capacity"`
	RefillPerSecond float64   `json:"refill_per_second"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// AllRoutes is the Route of a TenantRule that applies everywhere.
const AllRoutes = "*"

// Compile applies p's defaults, validates it and builds a Snapshot with the tenant
// overrides. A policy that does not validate returns a *FieldError; tenant rows that do not
// validate are left out and listed in Snapshot.Skipped, so one bad row never blocks a
// policy change.
func Compile(p *Policy, tenants []TenantRule) (*Snapshot, error) {
	p = p.withDefaults()
	if err := p.validate(); err != nil {
		return nil, err
	}
	s := &Snapshot{
		Policy:    p,
		byID:      make(map[string]*CompiledRoute, len(p.Routes)),
		limits:    make(map[string]*CompiledLimit, len(p.Limits)),
		plans:     make(map[string]*CompiledPlan, len(p.Plans)),
		overrides: map[string]map[string]ratelimit.Rule{},
	}
	s.localIP, _ = localIPRule(p.Settings.LocalIPLimit) // validated above
	for _, l := range p.Limits {
		s.limits[l.ID] = compileLimit(l)
	}
	withReserves(s.limits)
	for name, pl := range p.Plans {
		s.plans[name] = compilePlan(name, pl)
	}
	for i, r := range p.Routes {
		cr := &CompiledRoute{Route: r, ConnectTimeout: r.ConnectTimeout.D(), ResponseTimeout: r.ResponseTimeout.D(), Retry: r.Retry == nil || *r.Retry}
		if cr.ConnectTimeout == 0 {
			cr.ConnectTimeout = p.Settings.ConnectTimeout.D()
		}
		if cr.ResponseTimeout == 0 {
			cr.ResponseTimeout = p.Settings.ResponseTimeout.D()
		}
		for _, id := range r.Limits {
			for _, l := range chain(s.limits, id) { // a level brings its parents
				if !slices.Contains(cr.Limits, l) {
					cr.Limits = append(cr.Limits, l)
				}
			}
		}
		pat, _ := parsePattern(r.Match.Path) // validated above
		if other, ok := s.router.add(i, r.Match.Method, pat); !ok {
			return nil, fieldErr(ref("routes", i, r.ID)+".match", "same method and path as routes[%s]", p.Routes[other].ID)
		}
		s.routes = append(s.routes, cr)
		s.byID[r.ID] = cr
	}
	for _, cr := range s.routes {
		s.compileGraphQL(cr)
	}
	for _, t := range tenants {
		rule, err := s.tenantRule(t)
		if err != nil {
			s.Skipped = append(s.Skipped, fmt.Sprintf("rate_limit_rule (%s, %s): %v", t.Tenant, t.Route, err))
			continue
		}
		if s.overrides[t.Tenant] == nil {
			s.overrides[t.Tenant] = map[string]ratelimit.Rule{}
		}
		s.overrides[t.Tenant][t.Route] = rule
		s.Tenants = append(s.Tenants, t)
	}
	return s, nil
}

func compileLimit(l Limit) *CompiledLimit {
	alg, _ := ratelimit.ParseAlgorithm(l.Algorithm)
	limit, window, _ := ParseRate(l.Rate)
	key, _ := ParseKey(l.Key)
	return &CompiledLimit{Limit: l, Key: key, Rule: limitRule(l, alg, limit, window)}
}

// limitRule is the rate limiter's rule for l, its algorithm and rate already parsed. Lease
// and Shards are read by the limiter's Leases and Sharded, which the gateway puts in front
// of Redis for every rule (see build in run.go).
func limitRule(l Limit, alg ratelimit.Algorithm, limit int, window time.Duration) ratelimit.Rule {
	r := ratelimit.Rule{
		ID: l.ID, Algorithm: alg, Limit: limit, Window: window, Burst: l.Burst, Cost: l.Cost,
		Mode: ratelimit.Mode(l.Mode), OnStoreFailure: ratelimit.FailureMode(l.OnStoreFailure),
		Lease: l.Lease, LeaseWhenHot: l.LeaseWhenHot, Shards: l.Shards, Sync: time.Duration(l.Sync),
		Level: level(l, window), Global: globalRule(l.Global),
	}
	if p := l.EnforcePercent; p != nil && *p < 100 && r.Mode != ratelimit.Shadow {
		r.Mode, r.EnforcePercent = ratelimit.Partial, *p
	}
	queueRule(&r, l.Queue)
	return r
}

// LocalIPRuleID names the rule of settings.local_ip_limit in 429s, headers and metrics.
const LocalIPRuleID = "local-per-ip"

// localIPRule is the token bucket of settings.local_ip_limit (defaults applied); nil when
// it is off. Its errors name the field.
func localIPRule(l *LocalLimit) (*ratelimit.Rule, error) {
	if l == nil || l.Off {
		return nil, nil
	}
	const at = "settings.local_ip_limit"
	limit, window, err := ParseRate(l.Rate)
	if err != nil {
		return nil, fieldErr(at+".rate", "%v", err)
	}
	if l.Burst < 0 {
		return nil, fieldErr(at+".burst", "%d: want 0 (the limit) or more", l.Burst)
	}
	r := ratelimit.Rule{ID: LocalIPRuleID, Algorithm: ratelimit.TokenBucket, Limit: limit, Window: window, Burst: l.Burst}
	if err := r.Validate(); err != nil {
		return nil, fieldErr(at+"."+limitField(err, false), "%v", err)
	}
	return &r, nil
}

// The ids of the rules a policy makes rather than lists: a plan's rates are
// plan-<plan>-api and plan-<plan>-quota, a tenant override tenant-api or
// tenant-api.<route>. No limit id may start with either (ValidateLimit): a limit sharing an
// id with one of them would name one rule and key twice in a partner's request, which the
// limiter refuses, and every such request would fail.
const (
	planRulePrefix = "plan-"
	tenantRuleID   = "tenant-api"
)

func compilePlan(name string, pl Plan) *CompiledPlan {
	cp := &CompiledPlan{Name: name, Unlimited: pl.Unlimited}
	if pl.API != "" {
		limit, window, _ := ParseRate(pl.API)
		cp.API = &ratelimit.Rule{ID: planRulePrefix + name + "-api", Algorithm: ratelimit.TokenBucket, Limit: limit, Window: window}
	}
	if pl.Quota != "" {
		limit, window, _ := ParseRate(pl.Quota)
		cp.Quota = &ratelimit.Rule{ID: planRulePrefix + name + "-quota", Algorithm: ratelimit.FixedWindow, Limit: limit, Window: window}
	}
	return cp
}

// CheckTenantRule reports whether the table row t would apply over s, as a *FieldError
// naming tenant, route, capacity or refill_per_second: a row that does not is left out by
// Compile (Snapshot.Skipped), so whoever writes rows checks them first.
func (s *Snapshot) CheckTenantRule(t TenantRule) error {
	_, err := s.tenantRule(t)
	return err
}

// tenantRule turns a table row into the token bucket it stands for. Its id names the scope
// ("tenant-api" everywhere, "tenant-api.holds" on one route), as the plan rule it replaces
// does in the RateLimit headers.
func (s *Snapshot) tenantRule(t TenantRule) (ratelimit.Rule, error) {
	if t.Tenant == "" {
		return ratelimit.Rule{}, fieldErr("tenant", "empty tenant")
	}
	id := tenantRuleID
	if t.Route != AllRoutes {
		if s.byID[t.Route] == nil {
			return ratelimit.Rule{}, fieldErr("route", "%q is not in the policy", t.Route)
		}
		id += "." + t.Route
	}
	switch {
	case t.Capacity < 1:
		return ratelimit.Rule{}, fieldErr("capacity", "%d: want 1 or more", t.Capacity)
	case !(t.RefillPerSecond > 0) || t.RefillPerSecond > 1e6:
		return ratelimit.Rule{}, fieldErr("refill_per_second", "%g: want more than 0, at most 1e6", t.RefillPerSecond)
	}
	limit, window := refillRate(t.RefillPerSecond)
	r := ratelimit.Rule{ID: id, Algorithm: ratelimit.TokenBucket, Limit: limit, Window: window, Burst: t.Capacity}
	if err := r.Validate(); err != nil {
		f := "refill_per_second"
		if re, ok := errors.AsType[*ratelimit.RuleError](err); ok && re.Field == "burst" {
			f = "capacity"
		}
		return ratelimit.Rule{}, fieldErr(f, "%v", err)
	}
	return r, nil
}

// refillRate writes a refill rate as limit per window with a whole limit: per second, minute
// or hour, whichever is exact first (0.5/s is 30 per minute), else rounded per hour.
func refillRate(perSecond float64) (int, time.Duration) {
	for _, w := range []time.Duration{time.Second, time.Minute, time.Hour} {
		n := perSecond * w.Seconds()
		if n >= 1 && math.Abs(n-math.Round(n)) < 1e-9 {
			return int(math.Round(n)), w
		}
	}
	return max(1, int(math.Round(perSecond*3600))), time.Hour
}

// Match returns the route for a request's method and cleaned path, or nil with the methods
// the path allows (none when no route has the path).
func (s *Snapshot) Match(method, path string) (*CompiledRoute, []string) {
	i, allowed := s.router.match(method, path)
	if i < 0 {
		return nil, allowed
	}
	return s.routes[i], nil
}

// LocalIPLimit returns the rule of settings.local_ip_limit, or false when it is off.
func (s *Snapshot) LocalIPLimit() (ratelimit.Rule, bool) {
	if s.localIP == nil {
		return ratelimit.Rule{}, false
	}
	return *s.localIP, true
}

// Routes lists the routes in policy order.
func (s *Snapshot) Routes() []*CompiledRoute { return s.routes }

// Route returns the route with id, or nil.
func (s *Snapshot) Route(id string) *CompiledRoute { return s.byID[id] }

// Limit returns the limit with id, or nil.
func (s *Snapshot) Limit(id string) *CompiledLimit { return s.limits[id] }

// Plan returns the named plan, or the default plan when the policy does not define it; nil
// when the policy has no plans at all.
func (s *Snapshot) Plan(name string) *CompiledPlan {
	if p, ok := s.plans[name]; ok {
		return p
	}
	return s.plans[s.Policy.Settings.DefaultPlan]
}

// TenantOverride returns the rate that replaces the plan's api rate for tenant on route: the
// route's own override first, then the tenant's "*" one.
func (s *Snapshot) TenantOverride(tenant, route string) (ratelimit.Rule, bool) {
	byRoute, ok := s.overrides[tenant]
	if !ok {
		return ratelimit.Rule{}, false
	}
	if r, ok := byRoute[route]; ok {
		return r, true
	}
	r, ok := byRoute[AllRoutes]
	return r, ok
}
