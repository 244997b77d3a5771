package bffmobile

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/bffkit/servicetest"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
)

// TestRun runs the whole process against fake services: ready while the catalog answers and
// not after it goes down, GraphQL on its path, GraphiQL only when asked.
func TestRun(t *testing.T) {
	svc := servicetest.Start(t, 3)
	env := svc.Env()
	env["GRAPHIQL"] = "true"
	p := testkit.RunProcess(t, Run, env)
	testkit.Eventually(t, 5*time.Second, "bff-mobile ready", p.Ready)

	req, _ := http.NewRequest(http.MethodPost, p.HTTPURL+Path, strings.NewReader(`{"query":"{ feed(first: 2) { cards { title venueName } } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(identity.HeaderUser, fan)
	if got := do(t, req); !strings.Contains(got, `{"title":"Show number 1","venueName":"Venue 1 of São Paulo"}`) {
		t.Errorf("POST %s = %s, want the first card", Path, got)
	}
	req, _ = http.NewRequest(http.MethodGet, p.HTTPURL+Path, nil)
	req.Header.Set("Accept", "text/html")
	if got := do(t, req); !strings.Contains(got, "BoxOffice mobile") {
		t.Errorf("GET %s as a browser = %.200s, want the GraphiQL page", Path, got)
	}

	svc.Catalog.Stop()
	testkit.Eventually(t, 5*time.Second, "bff-mobile not ready without the catalog", func() bool { return !p.Ready() })
}

func do(t *testing.T, req *http.Request) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
