// Package graphqlop reads which GraphQL operation a request asks for, and which root fields
// it selects, without a schema: enough for the gateway to count a mutation's writes (each
// root field of a mutation is one call of the service behind it) before the BFF runs them.
//
// It reads what gqlgen's POST and GET transports read — a JSON body or the URL's query,
// operationName — and picks the operation as gqlgen's executor does, so the operation the
// gateway counts is the one the BFF executes. Everything it refuses comes back as a
// *problem.Error (400) naming the field at fault, never echoing the document.
package graphqlop

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"

	"boxoffice.dev/platform/problem"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// Operation types, as a document spells them.
const (
	Query        = string(ast.Query)
	Mutation     = string(ast.Mutation)
	Subscription = string(ast.Subscription)
)

// MaxTokens caps the tokens of a document, far above any query the apps send: parsing is
// recursive, and a document of a million nested braces should cost a 400, not a deep stack.
const MaxTokens = 15000

// Operation is the operation a request runs.
type Operation struct {
	// Type is Query or Mutation (a subscription is refused).
	Type string
	// Name is the operation's name; "" for an anonymous one.
	Name string
	// Fields are the names of the root fields it selects, one per response key, in document
	// order, fragments spread in. Aliased calls of one field are separate calls and appear
	// once each ("a: placeHold … b: placeHold" is placeHold twice); selections sharing a
	// response key are merged into one call by GraphQL and appear once. Introspection fields
	// (__typename) are left out: they run nothing. Directives are ignored, so a field under
	// @skip still appears: counting a call that does not run errs on the safe side.
	Fields []string
}

// params are the members of a POST body that gqlgen reads. Decoded by encoding/json as
// gqlgen decodes them: names match case-insensitively and the last duplicate wins.
type params struct {
	Query         string `json:"query"`
	OperationName string `json:"operationName"`
}

// FromJSON reads the operation of a POST body {"query", "operationName", "variables"}.
// Variables are not read: they fill arguments, never which fields run.
func FromJSON(body []byte) (Operation, error) {
	var p params
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&p); err != nil {
		return Operation{}, problem.InvalidField("body", "want a JSON object with query, operationName and variables")
	}
	return Parse(p.Query, p.OperationName)
}

// Parse reads the operation operationName of the document query, or its only operation
// when operationName is "".
func Parse(query, operationName string) (Operation, error) {
	if query == "" {
		return Operation{}, problem.InvalidField("query", "want a GraphQL document, got none")
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, MaxTokens)
	if err != nil {
		return Operation{}, syntaxError(err)
	}
	op, err := pick(doc.Operations, operationName)
	if err != nil {
		return Operation{}, err
	}
	if op.Operation == ast.Subscription {
		return Operation{}, problem.InvalidField("query", "subscriptions are not offered: want a query or a mutation")
	}
	o := Operation{Type: string(op.Operation), Name: op.Name}
	if o.Type == "" {
		o.Type = Query // the shorthand { … } is a query
	}
	w := walker{doc: doc, keys: map[string]bool{}, spread: map[string]bool{}}
	if err := w.walk(op.SelectionSet, &o.Fields); err != nil {
		return Operation{}, err
	}
	return o, nil
}

// pick chooses the operation as gqlgen's executor does: by name, or the only one.
func pick(ops ast.OperationList, name string) (*ast.OperationDefinition, error) {
	switch {
	case len(ops) == 0:
		return nil, problem.InvalidField("query", "want an operation, the document holds none")
	case name != "":
		if op := ops.ForName(name); op != nil {
			return op, nil
		}
		return nil, problem.InvalidField("operationName", "no operation of that name in the document")
	case len(ops) > 1:
		return nil, problem.InvalidField("operationName", "required: the document holds %d operations", len(ops))
	}
	return ops[0], nil
}

// walker collects the root fields of a selection set, spreading fragments.
type walker struct {
	doc    *ast.QueryDocument
	keys   map[string]bool // response keys seen
	spread map[string]bool // fragments spread already: once is enough, and cycles end
}

func (w *walker) walk(set ast.SelectionSet, out *[]string) error {
	for _, s := range set {
		switch s := s.(type) {
		case *ast.Field:
			key := s.Alias
			if key == "" {
				key = s.Name
			}
			if len(s.Name) >= 2 && s.Name[:2] == "__" || w.keys[key] {
				continue
			}
			w.keys[key] = true
			*out = append(*out, s.Name)
		case *ast.InlineFragment:
			if err := w.walk(s.SelectionSet, out); err != nil {
				return err
			}
		case *ast.FragmentSpread:
			if w.spread[s.Name] {
				continue
			}
			w.spread[s.Name] = true
			f := w.doc.Fragments.ForName(s.Name)
			if f == nil {
				return problem.InvalidField("query", "fragment %s is not defined", s.Name)
			}
			if err := w.walk(f.SelectionSet, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// quoted matches the quoted parts of a parser message, which quote the client's text.
var quoted = regexp.MustCompile(`\s*"(?:[^"\\]|\\.)*"`)

// syntaxError names where and how the document fails to parse, its quoted text left out:
// an answer never echoes what the client sent.
func syntaxError(err error) error {
	var ge *gqlerror.Error
	if !errors.As(err, &ge) {
		return problem.InvalidField("query", "not valid GraphQL")
	}
	msg := quoted.ReplaceAllString(ge.Message, "")
	if len(ge.Locations) > 0 {
		l := ge.Locations[0]
		return problem.InvalidField("query", "not valid GraphQL at line %d, column %d: %s", l.Line, l.Column, msg)
	}
	return problem.InvalidField("query", "not valid GraphQL: %s", msg)
}
