package graphqlserver

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestGraphiQLPageIsSelfContained loads the page as a browser would: it names no other
// host, and every script and stylesheet it names is served here with its type.
func TestGraphiQLPageIsSelfContained(t *testing.T) {
	mux := http.NewServeMux()
	GraphiQL{Title: "BoxOffice test", Path: "/graphiql/test", Endpoint: "/graphql/test"}.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	page, ctype := get(t, srv.URL+"/graphiql/test", http.StatusOK)
	if !strings.HasPrefix(ctype, "text/html") {
		t.Errorf("GET /graphiql/test: Content-Type %q, want text/html", ctype)
	}
	if u := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+`).FindString(page); u != "" {
		t.Errorf("GET /graphiql/test names %q, want no other host", u)
	}
	for _, want := range []string{"BoxOffice test", `data-endpoint="/graphql/test"`, "POST /v1/auth/login", "make up"} {
		if !strings.Contains(page, want) {
			t.Errorf("GET /graphiql/test = %.300s…, want it to hold %q", page, want)
		}
	}

	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 5 {
		t.Errorf("GET /graphiql/test references %d files, want 5 (a stylesheet, four scripts)", len(refs))
	}
	for _, ref := range refs {
		_, ctype := get(t, srv.URL+ref[1], http.StatusOK)
		want := "text/javascript"
		if strings.HasSuffix(ref[1], ".css") {
			want = "text/css"
		}
		if !strings.HasPrefix(ctype, want) {
			t.Errorf("GET %s: Content-Type %q, want %s", ref[1], ctype, want)
		}
	}
}

// TestGraphiQLHeadersPrefilled decodes the headers the editor opens with.
func TestGraphiQLHeadersPrefilled(t *testing.T) {
	rec := httptest.NewRecorder()
	GraphiQL{Path: "/graphiql/test", Endpoint: "/graphql/test"}.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/graphiql/test", nil))
	m := regexp.MustCompile(`data-headers="([^"]*)"`).FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("GET /graphiql/test = %.300s…, want a data-headers attribute", rec.Body.String())
	}
	if strings.Contains(m[1], `\u003c`) {
		t.Errorf("data-headers = %q, want the placeholder readable in the editor, not JSON-escaped", m[1])
	}
	var headers map[string]string
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &headers); err != nil {
		t.Fatalf("data-headers %q: %v", m[1], err)
	}
	if got, want := headers["Authorization"], AuthorizationPlaceholder; got != want || len(headers) != 1 {
		t.Errorf("data-headers = %v, want only Authorization: %q", headers, want)
	}
	if !strings.HasPrefix(AuthorizationPlaceholder, "Bearer ") {
		t.Errorf("AuthorizationPlaceholder = %q, want a Bearer token's shape", AuthorizationPlaceholder)
	}
}

// TestGraphiQLAssetPaths serves the assets beneath Path only, and revalidates them.
func TestGraphiQLAssetPaths(t *testing.T) {
	mux := http.NewServeMux()
	GraphiQL{Path: "/graphiql/test", Endpoint: "/graphql/test"}.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, tc := range []struct {
		name, path string
		want       int
	}{
		{"an asset", "/graphiql/test/react.production.min.js", http.StatusOK},
		{"a license", "/graphiql/test/LICENSE-graphiql.txt", http.StatusOK},
		{"no such asset", "/graphiql/test/nothing.js", http.StatusNotFound},
		{"the template", "/graphiql/test/page.html", http.StatusNotFound},
		{"outside the path", "/graphiql/react.production.min.js", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			get(t, srv.URL+tc.path, tc.want)
		})
	}

	resp, err := http.Get(srv.URL + "/graphiql/test/graphiql.min.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/graphiql/test/graphiql.min.js", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if etag == "" || resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET graphiql.min.js again with its ETag %q = %d, want 304", etag, resp.StatusCode)
	}
}

// get fetches url, checks its status and returns its body and Content-Type.
func get(t *testing.T, url string, want int) (body, ctype string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != want {
		t.Errorf("GET %s = %d, want %d", url, resp.StatusCode, want)
	}
	return string(b), resp.Header.Get("Content-Type")
}
