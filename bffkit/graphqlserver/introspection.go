package graphqlserver

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// NoIntrospection is a gqlgen handler extension that refuses an operation asking for the
// schema (__schema or __type) before any resolver runs, as a validation failure like any field
// the schema does not offer; __typename stays allowed. Without it gqlgen fails the field while
// executing, with an error that reads as the server's fault (code internal, logged as one).
type NoIntrospection struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = NoIntrospection{}

// ExtensionName names the extension in gqlgen's list.
func (NoIntrospection) ExtensionName() string { return "NoIntrospection" }

// Validate accepts every schema.
func (NoIntrospection) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses an operation with __schema or __type at its root, the only
// place they can be.
func (NoIntrospection) MutateOperationContext(_ context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if opCtx.Operation == nil {
		return nil
	}
	for _, f := range rootFields(opCtx.Operation.SelectionSet, opCtx.Doc.Fragments) {
		if f.Name == "__schema" || f.Name == "__type" {
			err := gqlerror.ErrorPosf(f.Position, "introspection is disabled on this endpoint: %s is not served", f.Name)
			errcode.Set(err, errcode.ValidationFailed)
			return err
		}
	}
	return nil
}
