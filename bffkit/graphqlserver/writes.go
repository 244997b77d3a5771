package graphqlserver

import (
	"context"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"boxoffice.dev/platform/problem"
)

// OneWrite is a gqlgen handler extension that refuses an operation carrying more than one
// field that acts (every Mutation field, and the Query fields in Queries), before any
// resolver runs: forty aliased placeHolds would be one request to a limit but forty holds.
// Fields count by response key, as GraphQL merges them; a write under @skip or @include
// still counts, since the rule reads the document, not the variables. See docs/lessons/bff.md.
type OneWrite struct {
	// Queries names the root Query fields that act, beside every Mutation field; nil = none.
	Queries []string
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = OneWrite{}

// ExtensionName names the extension in gqlgen's list.
func (OneWrite) ExtensionName() string { return "OneWrite" }

// Validate accepts every schema. A name in Queries that the schema lacks counts nothing; it
// is not refused here, as gqlgen's Use would panic on the error: each BFF's tests send two
// of its writing queries and see them refused.
func (OneWrite) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext counts the validated operation's writes and refuses more than one
// with an Invalid problem code.
func (o OneWrite) MutateOperationContext(_ context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if opCtx.Operation == nil {
		return nil
	}
	var writes []string
	seen := map[string]bool{}
	for _, f := range rootFields(opCtx.Operation.SelectionSet, opCtx.Doc.Fragments) {
		key := f.Alias
		if key == "" {
			key = f.Name
		}
		if seen[key] || !o.acts(opCtx.Operation.Operation, f.Name) {
			continue
		}
		seen[key] = true
		if key == f.Name {
			writes = append(writes, f.Name)
		} else {
			writes = append(writes, key+": "+f.Name)
		}
	}
	if len(writes) <= 1 {
		return nil
	}
	const shown = 3
	list := strings.Join(writes[:min(len(writes), shown)], ", ")
	if len(writes) > shown {
		list += ", …"
	}
	err := gqlerror.Errorf("an operation may carry one write, this one has %d (%s): send each in a request of its own", len(writes), list)
	errcode.Set(err, string(problem.Invalid))
	return err
}

// acts reports whether the root field name of an operation of kind op is a write.
func (o OneWrite) acts(op ast.Operation, name string) bool {
	switch op {
	case ast.Mutation:
		return !strings.HasPrefix(name, "__")
	case ast.Query:
		for _, q := range o.Queries {
			if q == name {
				return true
			}
		}
	}
	return false
}

// rootFields are the fields at the root of an operation's selection set, with those of the
// inline fragments and fragment spreads at that level. Each named fragment is read once, so
// the walk is linear in the document whatever its spreads; the fields below the root are not
// visited (a write or an introspection field can only be at the root).
func rootFields(set ast.SelectionSet, fragments ast.FragmentDefinitionList) []*ast.Field {
	var out []*ast.Field
	read := map[string]bool{}
	var walk func(ast.SelectionSet)
	walk = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				out = append(out, s)
			case *ast.InlineFragment:
				walk(s.SelectionSet)
			case *ast.FragmentSpread:
				if read[s.Name] {
					continue
				}
				read[s.Name] = true
				if def := fragments.ForName(s.Name); def != nil {
					walk(def.SelectionSet)
				}
			}
		}
	}
	walk(set)
	return out
}
