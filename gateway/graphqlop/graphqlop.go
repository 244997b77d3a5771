// Package graphqlop reads which GraphQL operation a request asks for, which root fields it
// selects and what it costs, without a schema: enough for the gateway to count a mutation's
// writes and to weigh a query (cost.go) before the BFF runs either.
//
// It reads what gqlgen's POST and GET transports read — a JSON body or the URL's query,
// operationName, variables, a persisted query's hash — and picks the operation as gqlgen's
// executor does, so the operation the gateway counts is the one the BFF executes. Everything
// it refuses comes back as a *problem.Error (400) naming the field at fault, never echoing
// the document.
package graphqlop

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
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

// Request is a GraphQL request as it arrives over HTTP.
type Request struct {
	Query         string
	OperationName string
	// Variables fill the operation's arguments; numbers stay json.Number.
	Variables map[string]any
	// Hash is the SHA-256 (lower-case hex) of an automatic persisted query; "" for none.
	Hash string
}

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
	// Cost is the operation's calculated cost in points under the CostModel it was parsed
	// with (cost.go); at least 1.
	Cost int
}

// body is a POST body as gqlgen decodes it: names match case-insensitively and the last
// duplicate wins.
type body struct {
	Query         string          `json:"query"`
	OperationName string          `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    json.RawMessage `json:"extensions"`
}

// FromJSON reads a POST body {"query", "operationName", "variables", "extensions"}.
func FromJSON(data []byte) (Request, error) {
	var b body
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&b); err != nil {
		return Request{}, problem.InvalidField("body", "want a JSON object with query, operationName and variables")
	}
	return request(b.Query, b.OperationName, b.Variables, b.Extensions)
}

// FromURL reads a GET's query string: query, operationName, and variables and extensions as
// JSON text.
func FromURL(q url.Values) (Request, error) {
	return request(q.Get("query"), q.Get("operationName"), json.RawMessage(q.Get("variables")), json.RawMessage(q.Get("extensions")))
}

func request(query, name string, vars, ext json.RawMessage) (Request, error) {
	r := Request{Query: query, OperationName: name}
	if len(vars) > 0 && string(vars) != "null" {
		d := json.NewDecoder(bytes.NewReader(vars))
		d.UseNumber()
		if err := d.Decode(&r.Variables); err != nil {
			return Request{}, problem.InvalidField("variables", "want a JSON object")
		}
	}
	if len(ext) > 0 && string(ext) != "null" {
		var e struct {
			PersistedQuery *struct {
				Version    json.Number `json:"version"`
				Sha256Hash string      `json:"sha256Hash"`
			} `json:"persistedQuery"`
		}
		if err := json.Unmarshal(ext, &e); err != nil {
			return Request{}, problem.InvalidField("extensions", "want a JSON object")
		}
		if pq := e.PersistedQuery; pq != nil {
			if pq.Version != "1" {
				return Request{}, problem.InvalidField("extensions.persistedQuery.version", "want 1")
			}
			if !sha256Hex.MatchString(pq.Sha256Hash) {
				return Request{}, problem.InvalidField("extensions.persistedQuery.sha256Hash", "want the query's SHA-256 as 64 lower-case hex digits")
			}
			r.Hash = pq.Sha256Hash
		}
	}
	return r, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Parse reads the operation r names, or its only operation when it names none, and weighs
// it under m. A persisted query must be resolved first (Persisted.Resolve).
func Parse(r Request, m CostModel) (Operation, error) {
	if r.Query == "" {
		return Operation{}, problem.InvalidField("query", "want a GraphQL document, got none")
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: r.Query}, MaxTokens)
	if err != nil {
		return Operation{}, syntaxError(err)
	}
	op, err := pick(doc.Operations, r.OperationName)
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
	o.Cost = m.cost(doc, op, r.Variables, len(o.Fields))
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
			if introspection(s.Name) || w.keys[key] {
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

func introspection(name string) bool { return len(name) >= 2 && name[:2] == "__" }

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
