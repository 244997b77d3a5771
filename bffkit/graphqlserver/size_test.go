package graphqlserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/introspection"
)

func TestTokenLimitRefusesABigQueryAtOnce(t *testing.T) {
	s := newSchema(func(context.Context) string { return `{}` })
	h := New(s, Options{GraphiQL: true, MaxBodyBytes: 1 << 20}) // the token limit alone
	for _, tc := range []struct {
		name    string
		query   string
		refused bool
	}{
		// GraphiQL's introspection query is the largest a client of the BFFs sends.
		{"introspection", introspection.Query, false},
		{"900 fields", "{" + strings.Repeat("__typename ", 900) + "}", false},
		{"8000 fields", "{" + strings.Repeat("__typename ", 8000) + "}", true},
		{"8000 fields with arguments", "{" + strings.Repeat(`fail(code: "x") `, 2000) + "}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.executed.Load()
			start := time.Now()
			_, resp := post(t, h, map[string]any{"query": tc.query})
			took := time.Since(start)
			ran := s.executed.Load() > before
			if ran == tc.refused {
				t.Fatalf("POST %d bytes: executed = %v, want %v (errors %+v)", len(tc.query), ran, !tc.refused, resp.Errors)
			}
			if !tc.refused {
				return
			}
			if len(resp.Errors) != 1 || !strings.Contains(resp.Errors[0].Message, "token limit") || firstCode(resp) != "GRAPHQL_PARSE_FAILED" {
				t.Errorf("POST %d bytes: errors = %+v, want one parse failure naming the token limit", len(tc.query), resp.Errors)
			}
			// Parsing and validating all 8000 fields took seconds; refusing at the limit is
			// a parse of its first 1000 tokens.
			if took > 100*time.Millisecond {
				t.Errorf("POST %d bytes refused in %v, want well under 100ms", len(tc.query), took)
			}
		})
	}
}

// TestFragmentsThatMultiplyAreRefusedAtOnce: thirty fragments that each spread the next
// twice are a query of 1.3 KB, well within the body and token limits, and two billion
// fields once expanded; measuring them one by one would take minutes.
func TestFragmentsThatMultiplyAreRefusedAtOnce(t *testing.T) {
	s := newSchema(func(context.Context) string { return `{}` })
	h := New(s, Options{MaxDepth: 3, MaxComplexity: 1000})
	for _, tc := range []struct {
		name     string
		query    string
		wantCode string // "" = executed
	}{
		{"9 doubling fragments, 1023 fields", doubling(9), CodeComplexityLimit},
		{"8 doubling fragments, 511 fields", doubling(8), ""},
		{"30 doubling fragments", doubling(30), CodeComplexityLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.executed.Load()
			start := time.Now()
			_, resp := post(t, h, map[string]any{"query": tc.query})
			took := time.Since(start)
			if got := firstCode(resp); got != tc.wantCode || (s.executed.Load() > before) != (tc.wantCode == "") {
				t.Errorf("POST %d bytes: code %q, executed %v; want %q (errors %+v)", len(tc.query), got, s.executed.Load() > before, tc.wantCode, resp.Errors)
			}
			if took > 100*time.Millisecond {
				t.Errorf("POST %d bytes answered in %v, want well under 100ms", len(tc.query), took)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	s := newSchema(func(context.Context) string { return `{"fail":null}` })
	h := New(s, Options{})
	query := `query($code: String!) { fail(code: $code) }`
	for _, tc := range []struct {
		name       string
		code       string // a variable, so the query itself stays small
		wantStatus int
	}{
		{"a large request", strings.Repeat("x", 15<<10), http.StatusOK},
		{"over 16 KiB", strings.Repeat("x", 17<<10), http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.executed.Load()
			b, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"code": tc.code}})
			req := httptest.NewRequest(http.MethodPost, "/graphql/test", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Errorf("POST of %d bytes = %d %s, want %d", len(b), rec.Code, rec.Body, tc.wantStatus)
			}
			if ran := s.executed.Load() > before; ran != (tc.wantStatus == http.StatusOK) {
				t.Errorf("POST of %d bytes: executed = %v, want %v", len(b), ran, !ran)
			}
		})
	}
}

// TestCachesKeepNoBigQuery sends distinct large queries, each with its persisted-query hash:
// the parsed-query cache and the APQ cache would keep every one (a thousand each) if they
// kept whatever they are given.
func TestCachesKeepNoBigQuery(t *testing.T) {
	s := newSchema(func(context.Context) string { return `{"fail":null}` })
	h := New(s, Options{MaxBodyBytes: 2 << 20}) // a body limit raised past the queries' size
	const n, size = 60, 500 << 10
	pad := strings.Repeat("x", size)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		query := fmt.Sprintf(`{ fail(code: "%d%s") }`, i, pad)
		sum := sha256.Sum256([]byte(query))
		apq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
		if _, resp := post(t, h, map[string]any{"query": query, "extensions": apq}); len(resp.Errors) > 0 {
			t.Fatalf("query %d: errors %+v", i, resp.Errors)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(h)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 10<<20 {
		t.Errorf("after %d queries of %d KiB the heap grew %d MiB, want under 10: the caches kept them", n, size>>10, grew>>20)
	}
}

func TestSmallOnlyCache(t *testing.T) {
	ctx := context.Background()
	c := persistedQueries(10)
	for _, tc := range []struct {
		name  string
		query string
		kept  bool
	}{
		{"a client's query", `{ me }`, true},
		{"4 KiB", "{" + strings.Repeat(" ", maxCachedQuery-2) + "}", true},
		{"over 4 KiB", "{" + strings.Repeat(" ", maxCachedQuery-1) + "}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Add(ctx, tc.name, tc.query)
			if _, got := c.Get(ctx, tc.name); got != tc.kept {
				t.Errorf("Add(%d bytes), then Get = %v, want %v", len(tc.query), got, tc.kept)
			}
		})
	}
}
