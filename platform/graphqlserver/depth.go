package graphqlserver

import (
	"context"
	"errors"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// DepthLimit is a gqlgen handler extension that rejects an operation whose fields nest more
// than Max levels deep, before any resolver runs. gqlgen has complexity limits but no depth
// limit; the two catch different things: complexity a wide query, depth a narrow one that
// walks a cycle (event → venue → events → venue …) far enough to fan out on every level.
//
// Fragments count as the fields they stand for. Introspection (__schema, __type) and
// __typename do not count: their depth is bounded by the schema, and GraphiQL's own
// introspection query is deeper than any query a client needs.
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
// with no selections is one level. A fragment that spreads itself (which validation rejects)
// is not followed twice.
func Depth(set ast.SelectionSet, fragments ast.FragmentDefinitionList) int {
	return depth(set, fragments, map[string]bool{})
}

func depth(set ast.SelectionSet, fragments ast.FragmentDefinitionList, visiting map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		d := 0
		switch s := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				continue
			}
			d = 1 + depth(s.SelectionSet, fragments, visiting)
		case *ast.InlineFragment:
			d = depth(s.SelectionSet, fragments, visiting)
		case *ast.FragmentSpread:
			def := fragments.ForName(s.Name)
			if def == nil || visiting[s.Name] {
				continue
			}
			visiting[s.Name] = true
			d = depth(def.SelectionSet, fragments, visiting)
			visiting[s.Name] = false
		}
		deepest = max(deepest, d)
	}
	return deepest
}
