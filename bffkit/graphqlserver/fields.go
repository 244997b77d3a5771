package graphqlserver

import (
	"context"
	"errors"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// FieldLimit is a gqlgen handler extension that refuses an operation with more than Max
// fields once its fragments are expanded, counting each fragment once, before gqlgen's
// complexity limit walks them one by one: fragments that each spread the next twice make 2^n
// fields of a few hundred bytes (twenty took half a second of a core). Max is the complexity
// limit, which every field costs at least one of, so the answer and its code are that limit's.
type FieldLimit struct {
	Max int // at least 1
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = FieldLimit{}

// ExtensionName names the extension in gqlgen's list.
func (FieldLimit) ExtensionName() string { return "FieldLimit" }

// Validate refuses a limit that would reject every query.
func (l FieldLimit) Validate(graphql.ExecutableSchema) error {
	if l.Max < 1 {
		return errors.New("field limit must be at least 1")
	}
	return nil
}

// MutateOperationContext counts the validated operation's expanded fields and rejects it
// when there are too many.
func (l FieldLimit) MutateOperationContext(_ context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if opCtx.Operation == nil {
		return nil
	}
	if n := Fields(opCtx.Operation.SelectionSet, opCtx.Doc.Fragments); n > l.Max {
		err := gqlerror.Errorf("operation has %d fields with its fragments expanded, which exceeds the limit of %d", n, l.Max)
		errcode.Set(err, CodeComplexityLimit)
		return err
	}
	return nil
}

// Fields is how many fields set has when every fragment spread is expanded where it stands:
// what gqlgen's complexity walks, one field at a time. It saturates at math.MaxInt. Each
// fragment is counted once and its count reused, so counting is linear in the document while
// the count can be exponential in it (fragments that each spread the next twice).
func Fields(set ast.SelectionSet, fragments ast.FragmentDefinitionList) int {
	return walk(set, fragments, map[string]int{}, saturatingAdd, func(_ *ast.Field, below int) int {
		return saturatingAdd(1, below)
	})
}
