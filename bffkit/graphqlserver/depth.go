package graphqlserver

import (
	"context"
	"errors"
	"math"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// DepthLimit is a gqlgen handler extension that rejects an operation whose fields nest more
// than Max levels deep, before any resolver runs: complexity catches a wide query, depth a
// narrow one walking a cycle (event → venue → events → …). Fragments count as their fields;
// introspection and __typename do not (the schema bounds them, and GraphiQL's introspection
// query is deeper than any client's).
type DepthLimit struct {
	Max int // at least 1
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = DepthLimit{}

// ExtensionName names the extension in gqlgen's list.
func (DepthLimit) ExtensionName() string { return "DepthLimit" }

// Validate refuses a limit that would reject every query.
func (d DepthLimit) Validate(graphql.ExecutableSchema) error {
	if d.Max < 1 {
		return errors.New("depth limit must be at least 1")
	}
	return nil
}

// MutateOperationContext measures the validated operation and rejects it when too deep.
func (d DepthLimit) MutateOperationContext(_ context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if opCtx.Operation == nil {
		return nil
	}
	if depth := Depth(opCtx.Operation.SelectionSet, opCtx.Doc.Fragments); depth > d.Max {
		err := gqlerror.Errorf("operation has depth %d, which exceeds the limit of %d", depth, d.Max)
		errcode.Set(err, CodeDepthLimit)
		return err
	}
	return nil
}

// Depth is how many levels of fields set nests, fragments expanded from fragments. A field
// with no selections is one level. Each fragment is measured once, so the cost is linear in
// the document even when fragments spread each other many times over; a fragment that
// spreads itself (which validation rejects) is not followed twice.
func Depth(set ast.SelectionSet, fragments ast.FragmentDefinitionList) int {
	return walk(set, fragments, map[string]int{}, func(a, b int) int { return max(a, b) }, func(f *ast.Field, below int) int {
		if strings.HasPrefix(f.Name, "__") {
			return 0
		}
		return 1 + below
	})
}

// walk folds set into one number: field gives a field's from its selections' (below),
// combine joins the selections of one set (max for a depth, a sum for a count), and
// fragments are folded once each, into known.
func walk(set ast.SelectionSet, fragments ast.FragmentDefinitionList, known map[string]int,
	combine func(a, b int) int, field func(f *ast.Field, below int) int) int {
	out := 0
	for _, sel := range set {
		n := 0
		switch s := sel.(type) {
		case *ast.Field:
			n = field(s, walk(s.SelectionSet, fragments, known, combine, field))
		case *ast.InlineFragment:
			n = walk(s.SelectionSet, fragments, known, combine, field)
		case *ast.FragmentSpread:
			v, ok := known[s.Name]
			if !ok {
				known[s.Name] = 0 // while it is folded: a cycle back to it adds nothing
				if def := fragments.ForName(s.Name); def != nil {
					v = walk(def.SelectionSet, fragments, known, combine, field)
				}
				known[s.Name] = v
			}
			n = v
		}
		out = combine(out, n)
	}
	return out
}

func saturatingAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
