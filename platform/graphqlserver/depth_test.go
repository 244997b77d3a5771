package graphqlserver

import (
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

func TestDepth(t *testing.T) {
	s := gqlparser.MustLoadSchema(&ast.Source{Input: testSchema})
	for _, tc := range []struct {
		name  string
		query string
		want  int
	}{
		{"one field", `{ me }`, 1},
		{"the deepest branch counts", `{ me node { name child { child { name } } } }`, 4},
		{"a fragment counts as its fields", `{ node { ...deep } } fragment deep on Node { child { name } }`, 3},
		{"an inline fragment too", `{ node { ... on Node { child { name } } } }`, 3},
		{"typename is free", `{ node { __typename } }`, 1},
		{"introspection is free", `{ me __schema { types { fields { type { ofType { name } } } } } }`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := gqlparser.LoadQueryWithRules(s, tc.query, nil)
			if err != nil {
				t.Fatalf("LoadQuery(%s): %v", tc.query, err)
			}
			if got := Depth(doc.Operations[0].SelectionSet, doc.Fragments); got != tc.want {
				t.Errorf("Depth(%s) = %d, want %d", tc.query, got, tc.want)
			}
		})
	}
}

func TestDepthLimitValidate(t *testing.T) {
	for _, tc := range []struct {
		max     int
		wantErr bool
	}{{0, true}, {-1, true}, {1, false}} {
		if err := (DepthLimit{Max: tc.max}).Validate(nil); (err != nil) != tc.wantErr {
			t.Errorf("DepthLimit{%d}.Validate = %v, want error %v", tc.max, err, tc.wantErr)
		}
	}
}
