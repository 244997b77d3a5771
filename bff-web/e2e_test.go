package bffweb

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/bffkit/servicetest"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
)

// TestRun runs the whole process against fake services: ready once the catalog answers,
// GraphQL on its path by POST and by GET (a persisted query's hash), GraphiQL when asked.
func TestRun(t *testing.T) {
	svc := servicetest.Start(t, 3)
	env := svc.Env()
	env["GRAPHIQL"] = "true"
	p := testkit.RunProcess(t, Run, env)
	testkit.Eventually(t, 5*time.Second, "bff-web ready", p.Ready)

	query := `{ event(id: "evt-001") { title venue { name } } }`
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, p.HTTPURL+Path, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(identity.HeaderUser, fan)
	if got := send(t, req); !strings.Contains(got, `"title":"Show number 1"`) {
		t.Errorf("POST %s = %s, want evt-001", Path, got)
	}

	// A persisted query by GET: the hash alone once the server has seen the query.
	sum := sha256.Sum256([]byte(query))
	ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
	get := func(withQuery bool) string {
		q := url.Values{"extensions": {ext}}
		if withQuery {
			q.Set("query", query)
		}
		req, _ := http.NewRequest(http.MethodGet, p.HTTPURL+Path+"?"+q.Encode(), nil)
		return send(t, req)
	}
	if got := get(true); !strings.Contains(got, "Show number 1") {
		t.Errorf("GET with the query and its hash = %s, want evt-001", got)
	}
	if got := get(false); !strings.Contains(got, "Show number 1") {
		t.Errorf("GET with the hash alone = %s, want evt-001", got)
	}

	req, _ = http.NewRequest(http.MethodGet, p.HTTPURL+Path, nil)
	req.Header.Set("Accept", "text/html")
	if got := send(t, req); !strings.Contains(got, "BoxOffice web") {
		t.Errorf("GET %s as a browser = %.200s, want the GraphiQL page", Path, got)
	}
}

func send(t *testing.T, req *http.Request) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
