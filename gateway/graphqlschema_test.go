package gateway

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/gateway/graphqlop"
	"boxoffice.dev/gateway/policy"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestPolicyMapsEveryBFFMutation holds gateway/policy.yaml to the BFFs' schemas: every
// Mutation field a BFF offers is mapped on the gateway's route to that BFF, or the gateway
// would refuse it with 400 (and the BFF's new write would never be usable through the front
// door); and every mapped field is one the schema has, so the mapping says what runs.
func TestPolicyMapsEveryBFFMutation(t *testing.T) {
	snap := shippedSnapshot(t)
	for _, bff := range []string{"bff-mobile", "bff-web"} {
		t.Run(bff, func(t *testing.T) {
			schema := loadSchema(t, filepath.Join("..", bff, "graph"))
			if schema.Mutation == nil {
				t.Fatalf("schema of %s has no Mutation type", bff)
			}
			var fields []string
			for _, f := range schema.Mutation.Fields {
				if f.Name[:2] != "__" {
					fields = append(fields, f.Name)
				}
			}
			rt := routeTo(t, snap, bff)
			for _, f := range fields {
				if rt.Mutations[f] == nil {
					t.Errorf("mutation %s of %s is not mapped on route %s: add it to graphql.mutations with the REST route doing the same write", f, bff, rt.ID)
				}
			}
			for f := range rt.Mutations {
				if !slices.Contains(fields, f) {
					t.Errorf("route %s maps mutation %s, which the schema of %s does not have", rt.ID, f, bff)
				}
			}
		})
	}
}

// TestPolicyWeighsEveryBFFList holds the cost model of each BFF route to its schema: every
// field that returns a list of objects is named in graphql.cost.lists (else the gateway would
// count its objects as one, and a large list would pass for cheap), and every name there is
// such a list, its parent, when given, a field of the type that holds it.
func TestPolicyWeighsEveryBFFList(t *testing.T) {
	snap := shippedSnapshot(t)
	for _, bff := range []string{"bff-mobile", "bff-web"} {
		t.Run(bff, func(t *testing.T) {
			schema := loadSchema(t, filepath.Join("..", bff, "graph"))
			rt := routeTo(t, snap, bff)
			if rt.Cost == nil {
				t.Fatalf("route %s has no graphql.cost: its operations would cost nothing", rt.ID)
			}
			lists := rt.Cost.Model.Lists
			holders := map[string][]string{} // list field → the types that have it
			for _, def := range schema.Types {
				if def.Kind != ast.Object || strings.HasPrefix(def.Name, "__") {
					continue
				}
				for _, f := range def.Fields {
					if f.Type.Elem == nil || schema.Types[f.Type.Elem.Name()].IsLeafType() {
						continue
					}
					holders[f.Name] = append(holders[f.Name], def.Name)
					named := lists[f.Name] > 0 || slices.ContainsFunc(slices.Collect(maps.Keys(lists)), func(k string) bool { return strings.HasSuffix(k, "."+f.Name) })
					if !named {
						t.Errorf("%s.%s is a list of %s, not in route %s's graphql.cost.lists: name it with its usual size", def.Name, f.Name, f.Type.Elem.Name(), rt.ID)
					}
				}
			}
			for key := range lists {
				parent, field, dotted := strings.Cut(key, ".")
				if !dotted {
					parent, field = "", key
				}
				types, ok := holders[field]
				if !ok {
					t.Errorf("graphql.cost.lists names %s: the schema of %s has no list of objects by that name", key, bff)
					continue
				}
				if dotted && !slices.ContainsFunc(types, func(typ string) bool { return returns(schema, parent, typ) }) {
					t.Errorf("graphql.cost.lists names %s: no field %s returns a type holding the list %s", key, parent, field)
				}
			}
		})
	}
}

// TestPolicyMapsTheAssistant: bff-web's ask spends the assistant's tokens, so the gateway
// charges it as the assistant's own route does; a mapped query field is one the schema has.
func TestPolicyMapsTheAssistant(t *testing.T) {
	snap := shippedSnapshot(t)
	rt := routeTo(t, snap, "bff-web")
	if a := rt.Queries["ask"]; a == nil || a.ID != "assistant" {
		t.Errorf("route %s maps ask to %v, want the assistant route", rt.ID, a)
	}
	for _, bff := range []string{"bff-mobile", "bff-web"} {
		schema := loadSchema(t, filepath.Join("..", bff, "graph"))
		for f := range routeTo(t, snap, bff).Queries {
			if schema.Query.Fields.ForName(f) == nil {
				t.Errorf("%s: the policy maps query %s, which the schema does not have", bff, f)
			}
		}
	}
}

// returns reports whether some field named field returns typ (or a list of it).
func returns(schema *ast.Schema, field, typ string) bool {
	for _, def := range schema.Types {
		if f := def.Fields.ForName(field); f != nil && f.Type.Name() == typ {
			return true
		}
	}
	return false
}

func shippedSnapshot(t *testing.T) *policy.Snapshot {
	t.Helper()
	b, err := os.ReadFile("policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := policy.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func routeTo(t *testing.T, snap *policy.Snapshot, service string) *policy.CompiledRoute {
	t.Helper()
	i := slices.IndexFunc(snap.Routes(), func(r *policy.CompiledRoute) bool { return r.Service == service && r.GraphQL != nil })
	if i < 0 {
		t.Fatalf("no GraphQL route of policy.yaml sends to %s: its operations would spend only its own limits", service)
	}
	return snap.Routes()[i]
}

// loadSchema loads every .graphqls file of dir, as gqlgen does.
func loadSchema(t *testing.T, dir string) *ast.Schema {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.graphqls"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("schema files in %s: %v, %d found; want at least one", dir, err, len(paths))
	}
	var sources []*ast.Source
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, &ast.Source{Name: path, Input: string(b)})
	}
	schema, err := gqlparser.LoadSchema(sources...)
	if err != nil {
		t.Fatalf("load schema %s: %v", dir, err)
	}
	return schema
}

// TestAppPagesFitTheBudget weighs the apps' own screens under the shipped cost model, the
// figures docs/lessons/bff.md quotes: the web's event page, with every seat of its map, is
// the dearest, and must still fit the points budget with room for a second.
func TestAppPagesFitTheBudget(t *testing.T) {
	snap := shippedSnapshot(t)
	pages := []struct {
		bff, name, query string
		want             int
	}{
		{"bff-web", "event page", `query($id: ID!) { event(id: $id) {
			id title description minPrice { currency minor }
			ticketClasses { id name price { currency minor } }
			venue { id name sections { name capacity } }
			availability { level }
			seatMap {
				counts { total available }
				sections { id rows { label seats { id number status } } }
				generalAdmission { ticketClass counts { total available } }
			}
		} }`, 1082},
		{"bff-web", "search page of 20", `{ search(query: "rock") { hits { id title minPrice { minor } } } }`, 41},
		{"bff-mobile", "event screen", `query($id: ID!) { event(id: $id) { id title lowestPrice { minor } ticketClasses { id name price { minor } } } }`, 12},
		{"bff-mobile", "feed of 50", `{ feed(first: 50) { cards { id title lowestPrice { currency minor } } } }`, 101},
		{"bff-mobile", "a hold", `mutation { placeHold(eventId: "e", quantity: 1) { id } }`, 11},
	}
	for _, p := range pages {
		rt := routeTo(t, snap, p.bff)
		op, err := graphqlop.Parse(graphqlop.Request{Query: p.query}, rt.Cost.Model)
		if err != nil {
			t.Fatalf("%s %s: %v", p.bff, p.name, err)
		}
		if most := rt.Cost.Limit.Rule.Burst; op.Cost != p.want || 2*op.Cost > most {
			t.Errorf("%s %s costs %d points, want %d, and twice that within the budget of %d", p.bff, p.name, op.Cost, p.want, most)
		}
	}
}
