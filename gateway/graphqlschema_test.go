package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"boxoffice.dev/gateway/policy"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestPolicyMapsEveryBFFMutation holds gateway/policy.yaml to the BFFs' schemas: every
// Mutation field a BFF offers is mapped on the gateway's route to that BFF, or the gateway
// would refuse it with 400 (and the BFF's new write would never be usable through the front
// door); and every mapped field is one the schema has, so the mapping says what runs.
func TestPolicyMapsEveryBFFMutation(t *testing.T) {
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
			i := slices.IndexFunc(snap.Routes(), func(r *policy.CompiledRoute) bool { return r.Service == bff })
			if i < 0 {
				t.Fatalf("no route of policy.yaml sends to %s", bff)
			}
			rt := snap.Routes()[i]
			if rt.Mutations == nil {
				t.Fatalf("route %s is not marked graphql: its mutations would spend only its own limits", rt.ID)
			}
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
