package graphqlserver

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestNoSchemaMapWithoutGraphiQL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		query string
	}{
		{"__schema", `{ __schema { queryType { name } } }`},
		{"__type", `{ __type(name: "Query") { name } }`},
		{"__schema through a fragment", `{ ...S } fragment S on Query { __schema { queryType { name } } }`},
		{"a misspelt field", `{ nod { name } }`},
		{"a misspelt field below", `{ node { nam } }`},
		{"a misspelt mutation", `mutation { hld }`},
		{"a field below a scalar", `{ me { name } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := newSchema(func(context.Context) string { return `{}` })
			h := New(s, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
			status, resp := post(t, h, map[string]any{"query": tc.query})
			if status != http.StatusUnprocessableEntity || firstCode(resp) != "GRAPHQL_VALIDATION_FAILED" || s.executed.Load() != 0 {
				t.Errorf("POST %s = %d, errors %+v, executed %d; want 422, a validation failure, nothing executed",
					tc.query, status, resp.Errors, s.executed.Load())
			}
			for _, e := range resp.Errors {
				if strings.Contains(e.Message, "Did you mean") {
					t.Errorf("POST %s: error %q suggests the schema's names", tc.query, e.Message)
				}
			}
			if logs.Len() > 0 {
				t.Errorf("POST %s logged %q, want nothing: the request is at fault, not the server", tc.query, logs.String())
			}
		})
	}
}

func TestGraphiQLServesIntrospection(t *testing.T) {
	h := New(newSchema(func(context.Context) string { return `{}` }), Options{GraphiQL: true})
	for _, query := range []string{`{ __schema { queryType { name } } }`, `{ __type(name: "Query") { name } }`} {
		if _, resp := post(t, h, map[string]any{"query": query}); len(resp.Errors) > 0 {
			t.Errorf("POST %s with GraphiQL: errors %+v, want none", query, resp.Errors)
		}
	}
	_, resp := post(t, h, map[string]any{"query": `{ nod { name } }`})
	if len(resp.Errors) != 1 || !strings.Contains(resp.Errors[0].Message, `Did you mean "node"?`) {
		t.Errorf("POST { nod } with GraphiQL: errors %+v, want a suggestion of node", resp.Errors)
	}
}
