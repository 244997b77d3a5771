package policy

import (
	"regexp"
	"slices"
	"sort"
)

// GraphQL marks a route as a GraphQL endpoint. A GraphQL request is one HTTP request
// whatever it does, so counting requests would let one request place any number of holds:
// instead the gateway reads the operation (package graphqlop) and a mutation spends, for
// each root field, the limits of the REST route that does the same write, keyed as that
// route keys them. One account's holds then share one budget through every door. A query
// spends the GraphQL route's own limits.
type GraphQL struct {
	// Mutations maps a root mutation field to the id of the REST route whose limits it
	// spends, e.g. placeHold: holds. A mutation field not listed is refused with 400 (fail
	// closed: a write nobody mapped must not pass unlimited); none listed refuses them all.
	Mutations map[string]string `yaml:"mutations" json:"mutations,omitempty"`
}

var graphQLName = regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]*$`)

// validateGraphQL checks a route's GraphQL mapping once every route is known: each field a
// GraphQL name, each target a route of the policy that is not GraphQL itself and has limits
// whose keys a GraphQL request can build (no json:<field> key: the REST body's fields are
// not in a GraphQL body).
func (p *Policy) validateGraphQL(at string, g *GraphQL) error {
	if g == nil {
		return nil
	}
	fields := make([]string, 0, len(g.Mutations))
	for f := range g.Mutations {
		fields = append(fields, f)
	}
	sort.Strings(fields) // the first problem is the same on every run
	for _, f := range fields {
		id, field := g.Mutations[f], at+".mutations."+f
		if !graphQLName.MatchString(f) {
			return fieldErr(at+".mutations", "%q: want a GraphQL field name", f)
		}
		i := slices.IndexFunc(p.Routes, func(r Route) bool { return r.ID == id })
		if i < 0 {
			return fieldErr(field, "route %q is not in the policy", id)
		}
		r := p.Routes[i]
		switch {
		case r.GraphQL != nil:
			return fieldErr(field, "route %q is a GraphQL route: want the REST route of the same write", id)
		case len(r.Limits) == 0:
			return fieldErr(field, "route %q has no limits: the mutation would spend nothing", id)
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

// mutations resolves a validated mapping to the compiled routes; nil for a route that is
// not GraphQL, and an empty map for one that maps no mutation.
func (s *Snapshot) mutations(g *GraphQL) map[string]*CompiledRoute {
	if g == nil {
		return nil
	}
	m := make(map[string]*CompiledRoute, len(g.Mutations))
	for f, id := range g.Mutations {
		m[f] = s.byID[id]
	}
	return m
}
