package policy

import (
	"maps"
	"regexp"
	"slices"

	"boxoffice.dev/gateway/graphqlop"
	"boxoffice.dev/gateway/ratelimit"
)

// GraphQL marks a route as a GraphQL endpoint, whose requests are counted by what they do:
// a root field mapped here spends the limits of the REST route doing the same thing, keyed as
// that route keys them, and the whole operation its cost in points; fields not mapped spend
// the route's own limits. See docs/lessons/bff.md, "One budget for a write, whichever door".
type GraphQL struct {
	// Mutations maps a root mutation field to the id of the REST route whose limits it
	// spends, e.g. placeHold: holds. A mutation field not listed is refused with 400 (fail
	// closed: a write nobody mapped must not pass unlimited); none listed refuses them all.
	Mutations map[string]string `yaml:"mutations" json:"mutations,omitempty"`
	// Queries maps root query fields that act like a REST route (ask: assistant) to that
	// route. Query fields not listed spend the GraphQL route's own limits.
	Queries map[string]string `yaml:"queries" json:"queries,omitempty"`
	// Cost, when set, weighs every operation and spends its cost from a limit in points.
	Cost *GraphQLCost `yaml:"cost" json:"cost,omitempty"`
}

// GraphQLCost is a route's query cost: the model (graphqlop.CostModel) and the budget.
type GraphQLCost struct {
	// Limit is the id of a token_bucket or gcra limit: burst is the most one operation may
	// cost, rate the points restored (GitHub and Shopify call it the restore rate).
	Limit string `yaml:"limit" json:"limit"`
	// Lists are the sizes the model gives list fields that take no first, last or limit.
	Lists map[string]int `yaml:"lists" json:"lists,omitempty"`
	// Mutation is what each write adds.
	Mutation int `yaml:"mutation" json:"mutation,omitempty"`
}

// CompiledCost is a GraphQLCost resolved: its limit and its model.
type CompiledCost struct {
	Limit *CompiledLimit
	Model graphqlop.CostModel
}

// MaxListSize bounds a Lists entry: a size above it is a typo, not a list.
const MaxListSize = 100_000

var (
	graphQLName = regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]*$`)
	listName    = regexp.MustCompile(`^([_A-Za-z][_0-9A-Za-z]*\.)?[_A-Za-z][_0-9A-Za-z]*$`)
)

// validateGraphQL checks a route's GraphQL mapping once every route is known: each field a
// GraphQL name, each target a route of the policy that is not GraphQL itself and has limits
// whose keys a GraphQL request can build (no json:<field> key: the REST body's fields are
// not in a GraphQL body); and the cost's limit one that restores points at a rate.
func (p *Policy) validateGraphQL(at string, r Route) error {
	g := r.GraphQL
	if g == nil {
		return nil
	}
	if err := p.validateMapping(at+".mutations", g.Mutations); err != nil {
		return err
	}
	if err := p.validateMapping(at+".queries", g.Queries); err != nil {
		return err
	}
	if g.Cost == nil {
		return nil
	}
	at += ".cost"
	i := slices.IndexFunc(p.Limits, func(l Limit) bool { return l.ID == g.Cost.Limit })
	if i < 0 {
		return fieldErr(at+".limit", "%q: want the id of a limit of the policy", g.Cost.Limit)
	}
	switch l := p.Limits[i]; {
	case l.Algorithm != string(ratelimit.TokenBucket) && l.Algorithm != string(ratelimit.GCRA):
		return fieldErr(at+".limit", "limit %s is %s: want token_bucket or gcra, a budget that restores points at a rate", l.ID, l.Algorithm)
	case l.CostHeader != "" || l.Cost != 0:
		return fieldErr(at+".limit", "limit %s has its own cost: the operation's cost is what it spends", l.ID)
	case slices.Contains(r.Limits, l.ID):
		return fieldErr(at+".limit", "limit %s is also among the route's limits: want it here only", l.ID)
	}
	for _, f := range slices.Sorted(maps.Keys(g.Cost.Lists)) {
		if !listName.MatchString(f) {
			return fieldErr(at+".lists", "%q: want a GraphQL field name, or parent.field", f)
		}
		if n := g.Cost.Lists[f]; n < 1 || n > MaxListSize {
			return fieldErr(at+".lists."+f, "%d: want 1 to %d", n, MaxListSize)
		}
	}
	if g.Cost.Mutation < 0 || g.Cost.Mutation > MaxListSize {
		return fieldErr(at+".mutation", "%d: want 0 to %d", g.Cost.Mutation, MaxListSize)
	}
	return nil
}

func (p *Policy) validateMapping(at string, m map[string]string) error {
	for _, f := range slices.Sorted(maps.Keys(m)) { // the first problem is the same on every run
		id, field := m[f], at+"."+f
		if !graphQLName.MatchString(f) {
			return fieldErr(at, "%q: want a GraphQL field name", f)
		}
		i := slices.IndexFunc(p.Routes, func(r Route) bool { return r.ID == id })
		if i < 0 {
			return fieldErr(field, "route %q is not in the policy", id)
		}
		r := p.Routes[i]
		switch {
		case r.GraphQL != nil:
			return fieldErr(field, "route %q is a GraphQL route: want the REST route doing the same", id)
		case len(r.Limits) == 0:
			return fieldErr(field, "route %q has no limits: the field would spend nothing", id)
		}
		for _, lid := range r.Limits {
			l := p.Limits[slices.IndexFunc(p.Limits, func(l Limit) bool { return l.ID == lid })] // validated
			key, _ := ParseKey(l.Key)
			if slices.ContainsFunc(key, func(k KeyPart) bool { return k.Kind == KeyJSON }) {
				return fieldErr(field, "route %q has limit %s keyed on the JSON body, which a GraphQL request does not carry", id, lid)
			}
		}
	}
	return nil
}

// routesOf resolves a validated mapping to the compiled routes.
func (s *Snapshot) routesOf(m map[string]string) map[string]*CompiledRoute {
	out := make(map[string]*CompiledRoute, len(m))
	for f, id := range m {
		out[f] = s.byID[id]
	}
	return out
}

// compileGraphQL fills cr's GraphQL fields; cr keeps them nil when it is not GraphQL.
func (s *Snapshot) compileGraphQL(cr *CompiledRoute) {
	g := cr.GraphQL
	if g == nil {
		return
	}
	cr.Mutations, cr.Queries = s.routesOf(g.Mutations), s.routesOf(g.Queries)
	if g.Cost != nil {
		cr.Cost = &CompiledCost{Limit: s.limits[g.Cost.Limit], Model: graphqlop.CostModel{Lists: g.Cost.Lists, Mutation: g.Cost.Mutation}}
	}
}
