// Package graphqltest reads GraphQL answers in the BFFs' tests: the data and the errors of an
// operation sent through gqlgen's client, including one the server refused as a whole (a
// limit, a bad persisted-query hash) with an HTTP error status.
package graphqltest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/client"
)

// Error is one GraphQL error as a client reads it.
type Error struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// Code is extensions.code: a problem code ("unavailable") or gqlgen's
// ("COMPLEXITY_LIMIT_EXCEEDED"); "" when there is none.
func (e Error) Code() string {
	code, _ := e.Extensions["code"].(string)
	return code
}

// Where is the error's path as dotted text: "search.hits.3.availability".
func (e Error) Where() string {
	parts := make([]string, len(e.Path))
	for i, p := range e.Path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// Post sends query through c, decodes the answer's data into out (nil = ignore it) and
// returns its errors, which may come with data (a partial answer) or without.
func Post(t testing.TB, c *client.Client, query string, out any, opts ...client.Option) []Error {
	t.Helper()
	resp, err := c.RawPost(query, opts...)
	if err != nil {
		// gqlgen's client reports an error status as "http 422: <body>"; the body is
		// still a GraphQL answer.
		_, body, ok := strings.Cut(err.Error(), ": ")
		var refused struct {
			Errors []Error `json:"errors"`
		}
		if !ok || !strings.HasPrefix(err.Error(), "http ") || json.Unmarshal([]byte(body), &refused) != nil {
			t.Fatalf("POST %s: %v", query, err)
		}
		return refused.Errors
	}
	if out != nil && resp.Data != nil {
		b, err := json.Marshal(resp.Data)
		if err != nil {
			t.Fatalf("POST %s: data: %v", query, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: data %s: %v", query, b, err)
		}
	}
	var errs []Error
	if len(resp.Errors) > 0 {
		if err := json.Unmarshal(resp.Errors, &errs); err != nil {
			t.Fatalf("POST %s: errors %s: %v", query, resp.Errors, err)
		}
	}
	return errs
}

// Aliased is field n times under the aliases a0, a1, … in one selection set: how a client
// asks for one field many times in a single operation.
func Aliased(field string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d: %s\n", i, field)
	}
	return b.String()
}

// Refused posts query through c and fails t unless the answer is one error with code whose
// message contains text, and no service was called meanwhile; callsDuring counts the calls
// (servicetest.Services.CallsDuring). It returns the error for further checks.
func Refused(t testing.TB, c *client.Client, callsDuring func(func()) map[string]int, query, code, text string, opts ...client.Option) Error {
	t.Helper()
	var errs []Error
	calls := callsDuring(func() { errs = Post(t, c, query, nil, opts...) })
	if len(calls) > 0 {
		t.Errorf("POST %.80s made calls %v, want none", query, calls)
	}
	if len(errs) != 1 || errs[0].Code() != code || !strings.Contains(errs[0].Message, text) {
		t.Errorf("POST %.80s: errors = %+v, want one %s saying %q", query, errs, code, text)
		return Error{}
	}
	return errs[0]
}
