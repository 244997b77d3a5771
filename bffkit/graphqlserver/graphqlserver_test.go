package graphqlserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"google.golang.org/grpc/metadata"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

const testSchema = `
type Query {
	me: String
	node: Node
	fail(code: String!): String
	ask(question: String): String
}
type Mutation {
	hold(n: Int): String
	release: String
}
type Node {
	name: String
	child: Node
}
`

// schema is an executable schema without generated code: it answers every operation with
// what answer returns for its context, and counts how many operations it executed, which
// is how the tests see that a rejected query never reached a resolver. Unlike gqlgen's
// ExecutableSchemaMock it keeps nothing of the calls, so a test can measure what the
// server itself keeps.
type schema struct {
	parsed   *ast.Schema
	answer   func(ctx context.Context) string
	executed atomic.Int32
}

var _ graphql.ExecutableSchema = (*schema)(nil)

func newSchema(answer func(ctx context.Context) string) *schema {
	return &schema{parsed: gqlparser.MustLoadSchema(&ast.Source{Input: testSchema}), answer: answer}
}

func (s *schema) Schema() *ast.Schema { return s.parsed }

func (s *schema) Complexity(context.Context, string, string, int, map[string]any) (int, bool) {
	return 0, false
}

func (s *schema) Exec(ctx context.Context) graphql.ResponseHandler {
	s.executed.Add(1)
	done := false
	return func(ctx context.Context) *graphql.Response {
		if done {
			return nil
		}
		done = true
		return &graphql.Response{Data: []byte(s.answer(ctx))}
	}
}

// gqlResponse is a GraphQL response as a client reads it.
type gqlResponse struct {
	Data       json.RawMessage            `json:"data"`
	Extensions map[string]json.RawMessage `json:"extensions"`
	Errors     []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// post sends body (a JSON object) to h with headers and decodes the answer.
func post(t *testing.T, h http.Handler, body map[string]any, headers ...string) (int, gqlResponse) {
	t.Helper()
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, "/graphql/test", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp gqlResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatalf("POST %s = %d %q, not a GraphQL response: %v", body["query"], rec.Code, rec.Body, err)
	}
	return rec.Code, resp
}

func firstCode(r gqlResponse) string {
	if len(r.Errors) == 0 {
		return ""
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	return code
}

func TestLimitsRejectBeforeAnyResolver(t *testing.T) {
	s := newSchema(func(context.Context) string { return `{"node":null}` })
	h := New(s, Options{MaxDepth: 3, MaxComplexity: 5})
	for _, tc := range []struct {
		name     string
		query    string
		wantCode string // "" = executed
	}{
		{"within both", `{ node { child { name } } }`, ""},
		{"too deep", `{ node { child { child { name } } } }`, CodeDepthLimit},
		{"too deep through a fragment", `{ node { ...c } } fragment c on Node { child { child { name } } }`, CodeDepthLimit},
		{"too complex", `{ me a: me b: me c: me d: me e: me }`, "COMPLEXITY_LIMIT_EXCEEDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.executed.Load()
			status, resp := post(t, h, map[string]any{"query": tc.query})
			ran := s.executed.Load() > before
			if got := firstCode(resp); got != tc.wantCode {
				t.Errorf("POST %s: error code %q, want %q (errors %+v)", tc.query, got, tc.wantCode, resp.Errors)
			}
			if want := map[bool]int{true: http.StatusOK, false: http.StatusUnprocessableEntity}[tc.wantCode == ""]; status != want {
				t.Errorf("POST %s: status %d, want %d: a refused query is the request's fault", tc.query, status, want)
			}
			if ran != (tc.wantCode == "") {
				t.Errorf("POST %s: executed = %v, want %v", tc.query, ran, tc.wantCode == "")
			}
		})
	}
}

func TestCallerComesFromTheGatewayHeaders(t *testing.T) {
	var got identity.Identity
	var outgoing metadata.MD
	var userErr error
	h := New(newSchema(func(ctx context.Context) string {
		got = Caller(ctx)
		outgoing, _ = metadata.FromOutgoingContext(ctx)
		_, userErr = User(ctx)
		return `{"me":null}`
	}), Options{})

	post(t, h, map[string]any{"query": `{ me }`}, identity.HeaderUser, "acc-7", identity.HeaderPlan, "free")
	if got.User != "acc-7" || got.Plan != "free" || userErr != nil {
		t.Errorf("Caller = %+v, User err %v; want acc-7 on the free plan", got, userErr)
	}
	if v := outgoing.Get(identity.HeaderUser); len(v) != 1 || v[0] != "acc-7" {
		t.Errorf("outgoing gRPC metadata %s = %v, want [acc-7]", identity.HeaderUser, v)
	}

	post(t, h, map[string]any{"query": `{ me }`})
	if got.User != "" || problem.CodeOf(userErr) != problem.Unauthorized {
		t.Errorf("without headers: Caller = %+v, User err %v; want anonymous and unauthorized", got, userErr)
	}
}

func TestErrorsCarryProblemCodes(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	h := New(newSchema(func(ctx context.Context) string {
		code := graphql.GetOperationContext(ctx).Variables["code"].(string)
		ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Field: graphql.CollectedField{Field: &ast.Field{Alias: "fail"}}})
		switch code {
		case "internal":
			graphql.AddError(ctx, errors.New("db password rejected"))
		default:
			graphql.AddError(ctx, &problem.Error{Code: problem.Code(code), Message: "no event evt-9", Field: "id"})
		}
		return `{"fail":null}`
	}), Options{Log: log})
	query := `query($code: String!) { fail(code: $code) }`
	for _, tc := range []struct {
		code, wantCode, wantMessage string
	}{
		{"not_found", "not_found", "no event evt-9"},
		{"unavailable", "unavailable", "no event evt-9"},
		{"internal", "internal", "internal error"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			_, resp := post(t, h, map[string]any{"query": query, "variables": map[string]any{"code": tc.code}})
			if len(resp.Errors) != 1 || resp.Errors[0].Message != tc.wantMessage || firstCode(resp) != tc.wantCode {
				t.Fatalf("errors = %+v, want one %q with code %q", resp.Errors, tc.wantMessage, tc.wantCode)
			}
			if len(resp.Errors[0].Path) != 1 || resp.Errors[0].Path[0] != "fail" {
				t.Errorf("error path = %v, want [fail]", resp.Errors[0].Path)
			}
		})
	}
	if !strings.Contains(logs.String(), "db password rejected") {
		t.Errorf("log = %q, want the internal error's cause", logs.String())
	}
}

// TestArgumentErrorsAreInvalid reads an argument the way gqlgen's generated code does (on
// the argument's path below its field) and fails, as a custom scalar's parse would.
func TestArgumentErrorsAreInvalid(t *testing.T) {
	var logs bytes.Buffer
	var s *schema
	s = newSchema(func(ctx context.Context) string {
		field := &ast.Field{Alias: "fail", Name: "fail", Definition: s.parsed.Query.Fields.ForName("fail")}
		ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Field: graphql.CollectedField{Field: field}})
		arg := graphql.WithPathContext(ctx, graphql.NewPathWithField("code"))
		graphql.AddError(ctx, graphql.ErrorOnPath(arg, errors.New("cannot use 7 as a code")))
		return `{"fail":null}`
	})
	h := New(s, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	_, resp := post(t, h, map[string]any{"query": `{ fail(code: "7") }`})
	if len(resp.Errors) != 1 || firstCode(resp) != "invalid" || resp.Errors[0].Extensions["field"] != "code" ||
		resp.Errors[0].Message != "cannot use 7 as a code" {
		t.Errorf("errors = %+v, want one invalid %q naming the field code", resp.Errors, "cannot use 7 as a code")
	}
	if logs.Len() > 0 {
		t.Errorf("log = %q, want nothing: the request is at fault, not the server", logs.String())
	}
}

func TestAutomaticPersistedQueries(t *testing.T) {
	s := newSchema(func(context.Context) string { return `{"me":"x"}` })
	h := New(s, Options{})
	query := `{ me }`
	sum := sha256.Sum256([]byte(query))
	apq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}

	steps := []struct {
		name     string
		body     map[string]any
		wantCode string
	}{
		{"hash of an unknown query", map[string]any{"extensions": apq}, "PERSISTED_QUERY_NOT_FOUND"},
		{"hash with its query", map[string]any{"query": query, "extensions": apq}, ""},
		{"hash alone, now known", map[string]any{"extensions": apq}, ""},
		{"hash of another query", map[string]any{"query": `{ node { name } }`, "extensions": apq}, ""},
	}
	for i, st := range steps {
		_, resp := post(t, h, st.body)
		if i == 3 {
			if len(resp.Errors) == 0 || !strings.Contains(resp.Errors[0].Message, "hash does not match") {
				t.Errorf("%s: errors = %+v, want a hash mismatch", st.name, resp.Errors)
			}
			continue
		}
		if got := firstCode(resp); got != st.wantCode {
			t.Errorf("%s: error code %q, want %q (%+v)", st.name, got, st.wantCode, resp.Errors)
		}
	}
	if got := s.executed.Load(); got != 2 {
		t.Errorf("executed %d operations, want 2 (the query sent, then its hash alone)", got)
	}
}

// TestQueryCostExtension: the cost the gateway weighed arrives in a header it alone sets,
// and leaves as extensions.cost, as the gateway wrote it; without one, no cost is claimed.
func TestQueryCostExtension(t *testing.T) {
	h := New(newSchema(func(context.Context) string { return `{"me":"x"}` }), Options{})
	const cost = `{"requested":3,"remaining":2997,"maximum":3000,"restoreRate":200,"policy":"graphql-points-per-account"}`
	_, resp := post(t, h, map[string]any{"query": `{ me }`}, identity.HeaderQueryCost, cost)
	if got := string(resp.Extensions["cost"]); got != cost {
		t.Errorf("extensions.cost = %s, want %s", got, cost)
	}
	for _, header := range []string{"", "not json", `[1]`} {
		_, resp := post(t, h, map[string]any{"query": `{ me }`}, identity.HeaderQueryCost, header)
		if c, ok := resp.Extensions["cost"]; ok {
			t.Errorf("header %q: extensions.cost = %s, want none", header, c)
		}
	}
}

func TestGraphiQLOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		h := New(newSchema(func(context.Context) string { return `{}` }), Options{GraphiQL: enabled, GraphiQLPath: "/graphiql/test"})
		req := httptest.NewRequest(http.MethodGet, "/graphql/test", nil)
		req.Header.Set("Accept", "text/html")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		toPage := rec.Code == http.StatusFound && rec.Header().Get("Location") == "/graphiql/test"
		if toPage != enabled {
			t.Errorf("GraphiQL %v: GET text/html = %d to %q, want sent to the page %v", enabled, rec.Code, rec.Header().Get("Location"), enabled)
		}
	}
}
