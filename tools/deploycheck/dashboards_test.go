package deploycheck

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/gateway"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/testkit"
)

func TestPromQLMetrics(t *testing.T) {
	tests := []struct {
		expr    string
		metrics []string
		labels  []string
	}{
		{`sum by (route) (rate(gateway_requests_total[$__rate_interval]))`, []string{"gateway_requests_total"}, []string{"route"}},
		{`sum by (route) (rate(gateway_requests_total{code=~"5.."}[5m])) / sum by (route) (rate(gateway_requests_total[5m]))`, []string{"gateway_requests_total"}, []string{"route", "code"}},
		{`histogram_quantile(0.99, sum by (le) (rate(ratelimit_decision_duration_seconds_bucket[1m])))`, []string{"ratelimit_decision_duration_seconds_bucket"}, []string{"le"}},
		{`max by (instance) (ratelimit_breaker_open) or vector(0)`, []string{"ratelimit_breaker_open"}, []string{"instance"}},
	}
	for _, tt := range tests {
		if got := PromQLMetrics(tt.expr); !slices.Equal(got, tt.metrics) {
			t.Errorf("PromQLMetrics(%q) = %q, want %q", tt.expr, got, tt.metrics)
		}
		if got := PromQLLabels(tt.expr); !slices.Equal(got, tt.labels) {
			t.Errorf("PromQLLabels(%q) = %q, want %q", tt.expr, got, tt.labels)
		}
	}
}

func TestSumsOverReplicas(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`sum by (service) (upstream_routable)`, []string{"upstream_routable"}},
		{`sum(upstream_routable) by (service)`, []string{"upstream_routable"}},
		{`count by (service) (upstream_routable == 1)`, []string{"upstream_routable"}},
		{`sum by (service) (max by (service, instance) (upstream_routable))`, []string{"upstream_routable"}},
		{`max by (service) (sum by (service, instance) (upstream_routable))`, nil},
		{`max by (service) (sum without (exported_instance) (upstream_routable))`, nil},
		{`sum by (service) (rate(upstream_requests_total[5m]))`, nil}, // each replica's own requests
		{`upstream_routable`, nil},
	}
	for _, tt := range tests {
		if got := SumsOverReplicas(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("SumsOverReplicas(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestDashboardsCountReplicasOnce: no panel adds up what every gateway replica reports about
// the same instances (SumsOverReplicas): with two replicas it would show each one twice.
func TestDashboardsCountReplicasOnce(t *testing.T) {
	w := loadWorkspace(t)
	files, err := filepath.Glob(filepath.Join(w.Root, "deploy", "compose", "grafana", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards (%v)", err)
	}
	for _, f := range files {
		queries, err := DashboardQueries(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			if m := SumsOverReplicas(q); len(m) > 0 {
				t.Errorf("%s: query %q adds up %v over the gateway replicas, counting each instance once per replica: sum by (…, instance), then max by (…)", filepath.Base(f), q, m)
			}
		}
	}
}

// TestDashboardsQueryRealMetrics runs a real gateway against a real redis-server, drives it
// through every outcome the dashboards plot (allowed, denied, shadow-denied, shed, no ready
// instance, Redis gone: fallback and fail-closed), scrapes its /metrics, and checks that
// every metric and label the provisioned dashboards query is one it exports. A renamed
// instrument otherwise leaves an empty panel and no error anywhere.
//
// The gateway dashboard is checked against a gateway's metrics, the services dashboard
// against a service's: a process on the platform kit, whose HTTP middleware and control hook
// every service shares (the gateway records its own RED metrics instead of the platform's).
func TestDashboardsQueryRealMetrics(t *testing.T) {
	w := loadWorkspace(t)
	scrapes := map[string]map[string]map[string]bool{
		"gateway.json":  busyGatewayMetrics(t),
		"services.json": scrapeBusyService(t),
	}

	files, err := filepath.Glob(filepath.Join(w.Root, "deploy", "compose", "grafana", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			scraped, ok := scrapes[filepath.Base(f)]
			if !ok {
				t.Fatalf("no process is scraped for dashboard %s: add it to the test", filepath.Base(f))
			}
			queries, err := DashboardQueries(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(queries) == 0 {
				t.Fatalf("DashboardQueries(%s) found no queries", f)
			}
			for _, q := range queries {
				checkQuery(t, fmt.Sprintf("query %q", q), q, scraped)
			}
		})
	}
}

// checkQuery reports, as what, each metric expr selects that is not in scraped (sample names
// and their label names) and each label it names that none of its metrics has.
func checkQuery(t *testing.T, what, expr string, scraped map[string]map[string]bool) {
	t.Helper()
	metrics := PromQLMetrics(expr)
	if len(metrics) == 0 {
		t.Errorf("%s selects no metric", what)
	}
	labels := map[string]bool{"job": true, "instance": true} // added by Prometheus
	for _, m := range metrics {
		ls, ok := scraped[m]
		if !ok {
			t.Errorf("%s: the process exports no %s", what, m)
		}
		for l := range ls {
			labels[l] = true
		}
	}
	for _, l := range PromQLLabels(expr) {
		if !labels[l] {
			t.Errorf("%s: no series of %v has label %s", what, metrics, l)
		}
	}
}

// scrapeBusyGateway returns the sample names of a gateway's /metrics, each with its label
// names, after traffic that exercised every path the dashboards show.
func scrapeBusyGateway(t *testing.T) map[string]map[string]bool {
	t.Helper()
	rd := testkit.StartRedis(t)
	inSlow := make(chan struct{}, 1)
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			inSlow <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.Write([]byte("{}"))
	}))
	t.Cleanup(backend.Close)
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })

	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	policy := fmt.Sprintf(`
services:
  - {name: api, instances: [%q], max_in_flight: 1}
  - {name: gone, instances: ["http://127.0.0.1:1"]}
routes:
  - {id: open, match: {method: GET, path: /open}, service: api, auth: none, limits: [per-ip, shadow-per-ip]}
  - {id: slow, match: {method: GET, path: /slow}, service: api, auth: none}
  - {id: closed, match: {method: POST, path: /closed}, service: api, auth: none, limits: [closed-per-ip], retry: false}
  - {id: down, match: {method: GET, path: /down}, service: gone, auth: none}
limits:
  - {id: per-ip, key: ip, algorithm: token_bucket, rate: 3/1m, burst: 3}
  - {id: shadow-per-ip, key: ip, algorithm: token_bucket, rate: 1/1m, burst: 1, mode: shadow}
  - {id: closed-per-ip, key: ip, algorithm: gcra, rate: 100/1m, burst: 10, on_store_failure: closed}
`, backend.URL)
	if err := os.WriteFile(policyFile, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	gw := testkit.RunProcess(t, gateway.Run, map[string]string{
		"POLICY_FILE": policyFile,
		"REDIS_URL":   rd.URL(),
		"ADMIN_ADDR":  adminAddr,
		"ADMIN_TOKEN": "test",
		"AUTH_URL":    backend.URL,
	})
	client := &http.Client{Timeout: 5 * time.Second}
	status := func(method, path string) int {
		req, _ := http.NewRequest(method, gw.HTTPURL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// Allowed, then shadow-denied (1/min), then denied (3/min).
	testkit.Eventually(t, 10*time.Second, "GET /open answers 200 (upstream probed ready)", func() bool { return status("GET", "/open") == http.StatusOK })
	testkit.Eventually(t, 5*time.Second, "GET /open answers 429", func() bool { return status("GET", "/open") == http.StatusTooManyRequests })
	// A hot key: this client's, over 100 decisions in one of HotKeys' 2-second counts. The
	// series lasts while the key is hot, so the scrape that saw it is kept.
	var hot map[string]map[string]bool
	testkit.Eventually(t, 15*time.Second, "ratelimit_hot_key_share names the client's key", func() bool {
		for range 150 {
			status("GET", "/open")
		}
		hot = scrape(t, "http://"+adminAddr)
		_, ok := hot["ratelimit_hot_key_share"]
		return ok
	})
	// Shed: one request holds the only slot of the service, the next is answered 503.
	go status("GET", "/slow")
	select {
	case <-inSlow:
	case <-time.After(5 * time.Second):
		t.Fatal("the first GET /slow never reached the backend")
	}
	if got := status("GET", "/slow"); got != http.StatusServiceUnavailable {
		t.Errorf("GET /slow while the slot is taken = %d, want 503 (shed)", got)
	}
	releaseOnce.Do(func() { close(release) })
	// No ready instance.
	testkit.Eventually(t, 10*time.Second, "GET /down answers 503", func() bool { return status("GET", "/down") == http.StatusServiceUnavailable })
	// Redis gone: fail-open rules fall back, fail-closed ones deny.
	rd.Stop()
	testkit.Eventually(t, 10*time.Second, "POST /closed answers 503 (fail closed)", func() bool { return status("POST", "/closed") == http.StatusServiceUnavailable })
	// GET /open was denied by the store: it is denied locally until that denial ends (at most
	// a second), and only then decided by the fallback.
	testkit.Eventually(t, 10*time.Second, "GET /open decided by the fallback", func() bool {
		status("GET", "/open")
		_, ok := scrape(t, "http://"+adminAddr)["ratelimit_fallback_decisions_total"]
		return ok
	})

	scraped := scrape(t, "http://"+adminAddr) // the gateway serves /metrics on its admin listener
	scraped["ratelimit_hot_key_share"] = hot["ratelimit_hot_key_share"]
	return scraped
}

// scrapeBusyService returns the sample names and label names of a service's /metrics after
// requests answered 200 and 500 on a route with a pattern, as every service's are.
func scrapeBusyService(t *testing.T) map[string]map[string]bool {
	t.Helper()
	run := func(ctx context.Context, _ []string, getenv func(string) string, stdout, _ io.Writer) error {
		return server.Main(ctx, server.Spec{Name: "catalog"}, getenv, stdout, func(context.Context, *server.Server) (http.Handler, error) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/events/{id}", func(w http.ResponseWriter, r *http.Request) {
				if r.PathValue("id") == "broken" {
					w.WriteHeader(http.StatusInternalServerError)
				}
			})
			return mux, nil
		})
	}
	svc := testkit.RunProcess(t, run, nil)
	for _, id := range []string{"e1", "broken"} {
		resp, err := http.Get(svc.HTTPURL + "/v1/events/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	return scrape(t, svc.HTTPURL)
}

// scrape returns the sample names of base's /metrics, each with its label names.
func scrape(t *testing.T, base string) map[string]map[string]bool {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	samples := map[string]map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		if samples[name] == nil {
			samples[name] = map[string]bool{}
		}
		// Up to the last brace: a label value may hold braces (http_route="/v1/events/{id}").
		if end := strings.LastIndexByte(rest, '}'); end >= 0 {
			for _, m := range promMatcher.FindAllStringSubmatch(rest[:end], -1) {
				samples[name][m[1]] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return samples
}
