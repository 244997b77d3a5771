package graphqlserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// goTypeName matches a package-qualified Go name ("graphql.RawParams", "json.Number").
var goTypeName = regexp.MustCompile(`\b[a-z]+\.[a-zA-Z][A-Za-z]+\b`)

// A POST that is no GraphQL request is refused before gqlgen reads it, with a problem that
// says what is wrong and where, and neither names a Go type nor repeats the body.
func TestBadBodiesAreRefusedWithoutEchoingThem(t *testing.T) {
	const marker = "ZEBRA-7731"
	s := newSchema(func(context.Context) string { return `{"me":"x"}` })
	h := New(s, Options{})
	tests := []struct {
		name, contentType, body string
		wantStatus              int
		wantField, wantDetail   string
	}{
		{"not JSON", "application/json", `query=` + marker, 400, "", "request body is not valid JSON at byte 1"},
		{"cut short", "application/json", `{"query":"{ me }` + marker, 400, "", "request body is not valid JSON: it ends in the middle of a value"},
		{"an array", "application/json", `["` + marker + `"]`, 400, "", "request body: want an object, got an array"},
		{"a string", "application/json", `"` + marker + `"`, 400, "", "request body: want an object, got a string"},
		{"empty", "application/json", ``, 400, "", "request body is empty: want an object"},
		{"trailing data", "application/json", `{"query":"{ me }"} "` + marker + `"`, 400, "", "request body has data after the JSON value, at byte 20"},
		{"query not a string", "application/json", `{"query":{"q":"` + marker + `"}}`, 400, "query", "want a string, got an object"},
		{"variables not an object", "application/json", `{"query":"{ me }","variables":["` + marker + `"]}`, 400, "variables", "want an object, got an array"},
		{"operation name a number", "application/json", `{"query":"{ me }","operationName":7}`, 400, "operationName", "want a string, got a number"},
		{"query named twice", "application/json", `{"query":"{ me }","query":"mutation { release }"}`, 400, "query", "appears twice in one object; send each key once"},
		{"a variable named twice", "application/json", `{"query":"{ me }","variables":{"n":1,"n":2}}`, 400, "variables.n", "appears twice in one object; send each key once"},
		{"text/plain", "text/plain", `{"query":"{ me }"}`, 415, "Content-Type", "want application/json (or a type ending in +json), not text/plain"},
		{"no content type", "", `{"query":"{ me }"}`, 415, "Content-Type", "want application/json (or a type ending in +json); the request names none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/graphql/test", strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := httptest.NewRecorder()
			before := s.executed.Load()
			h.ServeHTTP(rec, req)
			if s.executed.Load() != before {
				t.Errorf("POST %s executed an operation, want it refused first", tt.body)
			}
			var d struct {
				Status int
				Detail string
				Field  string
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
				t.Fatalf("POST %s = %d %s, not a problem: %v", tt.body, rec.Code, rec.Body, err)
			}
			if rec.Code != tt.wantStatus || rec.Header().Get("Content-Type") != "application/problem+json" ||
				d.Field != tt.wantField || d.Detail != tt.wantDetail {
				t.Errorf("POST %s = %d %s %s, want %d application/problem+json, field %q, detail %q",
					tt.body, rec.Code, rec.Header().Get("Content-Type"), rec.Body, tt.wantStatus, tt.wantField, tt.wantDetail)
			}
			answer := rec.Body.String()
			if strings.Contains(answer, marker) || len(tt.body) > 8 && strings.Contains(answer, tt.body) {
				t.Errorf("POST %s answers %s, which repeats the body", tt.body, answer)
			}
			if strings.Contains(answer, "struct {") || goTypeName.MatchString(d.Detail) {
				t.Errorf("POST %s answers %s, which names a Go type", tt.body, answer)
			}
		})
	}
}

// A request with members gqlgen ignores still runs, and the body gqlgen reads is the one sent.
func TestAGoodBodyReachesGqlgenWhole(t *testing.T) {
	s := newSchema(func(context.Context) string { return `{"me":"x"}` })
	h := New(s, Options{})
	status, resp := post(t, h, map[string]any{"query": "query Me { me }", "operationName": "Me", "variables": nil, "id": "client-side id"})
	if status != http.StatusOK || len(resp.Errors) > 0 || string(resp.Data) != `{"me":"x"}` {
		t.Errorf("POST = %d %s %+v, want 200 with the data", status, resp.Data, resp.Errors)
	}
}
