package graphqlserver

import (
	"fmt"
	"math"
	"strings"
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
		{"fragments that double, measured once each", doubling(70), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := load(t, s, tc.query)
			if got := Depth(doc.Operations[0].SelectionSet, doc.Fragments); got != tc.want {
				t.Errorf("Depth(%s) = %d, want %d", tc.query, got, tc.want)
			}
		})
	}
}

// load parses query and validates it against s with the default rules.
func load(t *testing.T, s *ast.Schema, query string) *ast.QueryDocument {
	t.Helper()
	doc, err := gqlparser.LoadQueryWithRules(s, query, nil)
	if err != nil {
		t.Fatalf("LoadQuery(%.60s): %v", query, err)
	}
	return doc
}

// doubling is a query whose fragments each spread the next twice: n fragments of a few
// dozen bytes each, 2^(n+1)-1 fields once expanded.
func doubling(n int) string {
	var b strings.Builder
	b.WriteString("{ ...F0 }\n")
	for i := range n {
		fmt.Fprintf(&b, "fragment F%d on Query { me ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { me }\n", n)
	return b.String()
}

func TestFields(t *testing.T) {
	s := gqlparser.MustLoadSchema(&ast.Source{Input: testSchema})
	for _, tc := range []struct {
		name  string
		query string
		want  int
	}{
		{"one field", `{ me }`, 1},
		{"nested fields each count", `{ me node { name child { name } } }`, 5},
		{"a fragment counts where it is spread", `{ node { ...n } a: node { ...n } } fragment n on Node { name child { name } }`, 8},
		{"an inline fragment", `{ node { ... on Node { name } } }`, 2},
		{"fragments that double", doubling(10), 1<<11 - 1},
		{"beyond an int", doubling(70), math.MaxInt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := load(t, s, tc.query)
			if got := Fields(doc.Operations[0].SelectionSet, doc.Fragments); got != tc.want {
				t.Errorf("Fields(%.60s) = %d, want %d", tc.query, got, tc.want)
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
