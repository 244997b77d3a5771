package graphqlserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestOneWritePerOperation(t *testing.T) {
	s := newSchema(func(context.Context) string { return `{}` })
	h := New(s, Options{WriteQueries: []string{"ask"}})
	for _, tc := range []struct {
		name    string
		query   string
		refused bool
	}{
		{"one mutation", `mutation { hold(n: 1) }`, false},
		{"one mutation and its __typename", `mutation { hold(n: 1) __typename }`, false},
		{"two mutations", `mutation { hold(n: 1) release }`, true},
		{"one mutation under two aliases", `mutation { a: hold(n: 1) b: hold(n: 1) }`, true},
		{"one mutation asked twice under one key", `mutation { hold(n: 1) hold(n: 1) }`, false},
		{"aliases in two fragments", `mutation { ...A ...B } fragment A on Mutation { a: hold } fragment B on Mutation { b: hold }`, true},
		{"one fragment spread twice", `mutation { ...A ...A } fragment A on Mutation { a: hold }`, false},
		{"aliases in inline fragments", `mutation { ... on Mutation { a: hold } ... { b: release } }`, true},
		{"a skipped write still counts", `mutation { a: hold @skip(if: true) b: hold }`, true},
		{"one writing query and reads", `{ ask(question: "jazz?") me node { name } }`, false},
		{"two writing queries", `{ a: ask(question: "jazz?") b: ask(question: "fado?") }`, true},
		{"many reads", `{ a: me b: me c: me d: fail(code: "x") e: fail(code: "y") }`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.executed.Load()
			status, resp := post(t, h, map[string]any{"query": tc.query})
			ran := s.executed.Load() > before
			if ran == tc.refused {
				t.Errorf("POST %s: executed = %v, want %v (errors %+v)", tc.query, ran, !tc.refused, resp.Errors)
			}
			if !tc.refused {
				return
			}
			if got := firstCode(resp); got != "invalid" || status != http.StatusUnprocessableEntity {
				t.Errorf("POST %s = %d, code %q; want 422, invalid", tc.query, status, got)
			}
			if len(resp.Errors) != 1 || !strings.Contains(resp.Errors[0].Message, "one write") {
				t.Errorf("POST %s: errors = %+v, want one saying an operation carries one write", tc.query, resp.Errors)
			}
		})
	}
}

func TestOneWriteNamesTheWrites(t *testing.T) {
	h := New(newSchema(func(context.Context) string { return `{}` }), Options{})
	var b strings.Builder
	b.WriteString("mutation {")
	for _, alias := range []string{"h0", "h1", "h2", "h3", "h4"} {
		b.WriteString(" " + alias + ": hold(n: 1)")
	}
	b.WriteString(" release }")
	_, resp := post(t, h, map[string]any{"query": b.String()})
	want := "an operation may carry one write, this one has 6 (h0: hold, h1: hold, h2: hold, …): send each in a request of its own"
	if len(resp.Errors) != 1 || resp.Errors[0].Message != want {
		t.Errorf("POST %s: errors = %+v, want %q", b.String(), resp.Errors, want)
	}
}
