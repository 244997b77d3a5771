package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/testkit"
)

const indexPolicy = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: events, match: {method: GET, path: /v1/events}, service: svc, auth: optional, limits: [per-ip]}
  - {id: graphql-web, match: {path: /graphql/web}, service: svc, auth: user, limits: [tokens]}
  - {id: admin-things, match: {method: POST, path: /v1/admin/things}, service: svc, auth: apikey, plans: [internal]}
limits:
  - {id: per-ip, key: ip, algorithm: gcra, rate: 5/1m, burst: 5}
  - {id: tokens, key: user, algorithm: fixed_window, rate: 100/1d, cost_header: X-Tokens}
plans:
  free: {api: 60/1m, quota: 1000/1d}
  internal: unlimited
`

// browserAccept is what a browser sends when it opens a page.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// indexGateway is a gateway on doc whose upstream records what reaches it, and the sinks of
// its access log and metrics.
func indexGateway(t *testing.T, doc, playground string) (http.Handler, *forwarded, *testkit.Buffer, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	m, err := newMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	last := &forwarded{}
	g := &gateway{
		live: liveOf(t, doc), auth: &authn.Authenticator{}, enforcer: limits.NewEnforcer(ratelimit.NewMemory(clock.Clock{}), nil, nil),
		upstream: &recordingForwarder{last: last}, log: logging.New(logs, slog.LevelInfo, "gateway"), metrics: m,
		now: time.Now, newTrace: randomTrace, index: index{playground: playground},
	}
	return g.handler(), last, logs, reader
}

func serve(h http.Handler, method, target, accept string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestIndexAnswers checks who gets which answer: exactly GET and HEAD of "/", a page for a
// browser and JSON for anyone else; every other request goes through the pipeline as before.
func TestIndexAnswers(t *testing.T) {
	h, last, _, _ := indexGateway(t, indexPolicy, "http://127.0.0.1:8090")
	tests := []struct {
		name, method, target, accept string
		wantStatus                   int
		wantType                     string // "" when not the index
	}{
		{"a browser", "GET", "/", browserAccept, http.StatusOK, "text/html; charset=utf-8"},
		{"curl", "GET", "/", "*/*", http.StatusOK, "application/json"},
		{"no Accept", "GET", "/", "", http.StatusOK, "application/json"},
		{"JSON preferred", "GET", "/", "application/json, text/html;q=0.5", http.StatusOK, "application/json"},
		{"HTML refused", "GET", "/", "text/html;q=0, */*", http.StatusOK, "application/json"},
		{"with a query", "GET", "/?from=readme", browserAccept, http.StatusOK, "text/html; charset=utf-8"},
		{"HEAD", "HEAD", "/", browserAccept, http.StatusOK, "text/html; charset=utf-8"},
		{"another path", "GET", "/x", browserAccept, http.StatusNotFound, ""},
		{"an index-like path", "GET", "/index.html", "", http.StatusNotFound, ""},
		{"POST", "POST", "/", "", http.StatusNotFound, ""},
		{"an encoded slash", "GET", "/%2F", "", http.StatusBadRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*last = forwarded{}
			w := serve(h, tt.method, tt.target, tt.accept)
			if w.Code != tt.wantStatus {
				t.Fatalf("%s %s = %d, want %d; body %s", tt.method, tt.target, w.Code, tt.wantStatus, w.Body)
			}
			if *last != (forwarded{}) {
				t.Errorf("%s %s was forwarded to %+v, want the gateway's own answer", tt.method, tt.target, *last)
			}
			if tt.wantType == "" {
				if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
					t.Errorf("%s %s Content-Type = %q, want the problem the gateway answered before", tt.method, tt.target, ct)
				}
				return
			}
			if got := w.Header().Get("Content-Type"); got != tt.wantType {
				t.Errorf("%s %s Content-Type = %q, want %q", tt.method, tt.target, got, tt.wantType)
			}
			if got := w.Header().Get("Vary"); got != "Accept" {
				t.Errorf("Vary = %q, want Accept", got)
			}
			if tt.method == "HEAD" && w.Body.Len() != 0 {
				t.Errorf("HEAD / body = %d bytes, want none", w.Body.Len())
			}
			if tt.method == "GET" && w.Body.Len() == 0 {
				t.Errorf("GET / body is empty")
			}
		})
	}
}

// TestIndexJSON checks the JSON index against the policy: the public routes in order with
// their auth and limits, the admin route left out, the GraphQL endpoint, the plans, the
// playground.
func TestIndexJSON(t *testing.T) {
	h, _, _, _ := indexGateway(t, indexPolicy, "http://127.0.0.1:8090")
	w := serve(h, "GET", "/", "")
	var got indexPage
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("GET / = %s: %v", w.Body, err)
	}
	want := indexPage{
		Name:       "BoxOffice gateway",
		Playground: "http://127.0.0.1:8090",
		GraphQL:    []indexGraphQL{{Path: "/graphql/web", Auth: "user"}},
		Docs:       indexDocs,
		Routes: []indexRoute{
			{ID: "events", Method: "GET", Path: "/v1/events", Auth: "optional",
				Limits: []indexLimit{{ID: "per-ip", Key: "ip", Algorithm: "gcra", Rate: "5/1m", Burst: 5}}},
			{ID: "graphql-web", Method: "*", Path: "/graphql/web", Auth: "user",
				Limits: []indexLimit{{ID: "tokens", Key: "user", Algorithm: "fixed_window", Rate: "100/1d", CostHeader: "X-Tokens"}}},
		},
		Plans: []indexPlan{{Name: "free", API: "60/1m", Quota: "1000/1d"}, {Name: "internal", Unlimited: true}},
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("GET / =\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if strings.Contains(w.Body.String(), "admin") {
		t.Errorf("GET / names an internal route: %s", w.Body)
	}
}

// TestIndexHTML checks the page a browser gets: the routes, the playground's link, and no
// asset it would have to fetch.
func TestIndexHTML(t *testing.T) {
	h, _, _, _ := indexGateway(t, indexPolicy, "http://127.0.0.1:8090")
	w := serve(h, "GET", "/", browserAccept)
	body := w.Body.String()
	for _, want := range []string{
		"<!doctype html>",
		`<a href="http://127.0.0.1:8090">`,
		"<code>GET</code></td><td><code>/v1/events</code></td><td>optional</td><td><code>per-ip</code>: 5/1m per ip (gcra, burst 5)",
		"<code>POST /graphql/web</code>",
		"<code>docs/architecture.md</code>",
		"<code>free</code>: 60/1m, quota 1000/1d",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("GET / (HTML) lacks %q:\n%s", want, body)
		}
	}
	for _, asset := range []string{"<script", "<link", "<img", "src=", "@import"} {
		if strings.Contains(body, asset) {
			t.Errorf("GET / (HTML) has %q: want a page with nothing to fetch", asset)
		}
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy = %q, want default-src 'none'", csp)
	}
	if strings.Contains(body, "admin") {
		t.Errorf("GET / (HTML) names an internal route")
	}

	// Without PLAYGROUND_URL the page says how to get one rather than link nowhere.
	h, _, _, _ = indexGateway(t, indexPolicy, "")
	if body := serve(h, "GET", "/", browserAccept).Body.String(); strings.Contains(body, "<a href") || !strings.Contains(body, "PLAYGROUND_URL") {
		t.Errorf("GET / without a playground:\n%s\nwant no link and PLAYGROUND_URL named", body)
	}
}

// TestIndexEscapes puts markup in everything the page shows from outside, a route's path
// and the playground's URL, and checks that none of it reaches the page as markup.
func TestIndexEscapes(t *testing.T) {
	doc := `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: odd, match: {method: GET, path: "/v1/<script>alert(1)</script>&\"x\""}, service: svc, auth: none}
`
	tests := []struct {
		name, playground string
		wantHTML         []string
	}{
		{"markup in a URL", `http://127.0.0.1:8090/?a="><script>alert(2)</script>`,
			[]string{`/v1/&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#34;x&#34;`, `href="http://127.0.0.1:8090/?a=%22%3e%3cscript%3ealert%282%29%3c/script%3e"`}},
		{"a javascript: URL", "javascript:alert(3)", []string{`href="#ZgotmplZ"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, _, _ := indexGateway(t, doc, tt.playground)
			page := serve(h, "GET", "/", browserAccept).Body.String()
			if strings.Contains(page, "<script") || strings.Contains(page, `"><`) {
				t.Errorf("GET / (HTML) has unescaped markup:\n%s", page)
			}
			for _, want := range tt.wantHTML {
				if !strings.Contains(page, want) {
					t.Errorf("GET / (HTML) lacks %q:\n%s", want, page)
				}
			}
			js := serve(h, "GET", "/", "").Body.String()
			if strings.ContainsAny(js, "<>") {
				t.Errorf("GET / (JSON) has a raw < or >: %s", js)
			}
			var got indexPage
			if err := json.Unmarshal([]byte(js), &got); err != nil || got.Routes[0].Path != `/v1/<script>alert(1)</script>&"x"` {
				t.Errorf("GET / (JSON) routes = %+v (%v), want the path as the policy has it", got.Routes, err)
			}
		})
	}
}

// TestIndexYieldsToThePolicy: a policy that routes "/" keeps it, for every method.
func TestIndexYieldsToThePolicy(t *testing.T) {
	doc := `
services: [{name: home, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: home, match: {method: GET, path: /}, service: home, auth: none}
  - {id: home-post, match: {method: POST, path: /}, service: home, auth: none}
`
	h, last, _, _ := indexGateway(t, doc, "")
	for _, method := range []string{"GET", "HEAD", "POST"} {
		*last = forwarded{}
		w := serve(h, method, "/", browserAccept)
		if w.Code != http.StatusNoContent || last.service != "home" {
			t.Errorf("%s / = %d forwarded to %q, want the policy's route to home", method, w.Code, last.service)
		}
	}

	doc = `
services: [{name: home, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: home-post, match: {method: POST, path: /}, service: home, auth: none}
`
	h, _, _, _ = indexGateway(t, doc, "")
	if w := serve(h, "GET", "/", ""); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET / on a policy routing POST / = %d, Allow %q, want 405 with Allow: POST", w.Code, w.Header().Get("Allow"))
	}
}

// TestIndexFollowsThePolicy: a policy change shows on the next request.
func TestIndexFollowsThePolicy(t *testing.T) {
	live := liveOf(t, indexPolicy)
	m, _ := newMetrics(nil)
	g := &gateway{live: live, auth: &authn.Authenticator{}, enforcer: limits.NewEnforcer(ratelimit.NewMemory(clock.Clock{}), nil, nil),
		upstream: &recordingForwarder{last: &forwarded{}}, log: logging.Discard(), metrics: m, now: time.Now, newTrace: randomTrace}
	h := g.handler()
	if body := serve(h, "GET", "/", "").Body.String(); strings.Contains(body, "/v1/search") {
		t.Fatalf("GET / lists /v1/search before the policy has it: %s", body)
	}
	changed := indexPolicy + "\n" // the same policy with one more route
	changed = strings.Replace(changed, "routes:\n", "routes:\n  - {id: search, match: {method: GET, path: /v1/search}, service: svc, auth: optional}\n", 1)
	if err := live.ReplaceFileData([]byte(changed)); err != nil {
		t.Fatal(err)
	}
	if body := serve(h, "GET", "/", "").Body.String(); !strings.Contains(body, `"/v1/search"`) {
		t.Errorf("GET / after the policy changed = %s, want /v1/search listed", body)
	}
}

// TestIndexIsObserved: the index is logged and counted as the gateway's own answer (outcome
// index), and not as a rejection.
func TestIndexIsObserved(t *testing.T) {
	h, _, logs, reader := indexGateway(t, indexPolicy, "")
	serve(h, "GET", "/", "")
	lines := accessLines(t, logs.String())
	if len(lines) != 1 || lines[0]["outcome"] != outcomeIndex || lines[0]["status"] != float64(http.StatusOK) || lines[0]["path"] != "/" {
		t.Fatalf("access log = %v, want one line with outcome index, status 200, path /", lines)
	}
	if got := durationCount(t, reader, outcomeIndex); got != 1 {
		t.Errorf("gateway.request.duration{outcome=index} count = %d, want 1", got)
	}
	if got := counterSum(t, reader, "gateway.requests"); got != 1 {
		t.Errorf("gateway.requests = %d, want 1", got)
	}
	if got := counterSum(t, reader, "gateway.rejections"); got != 0 {
		t.Errorf("gateway.rejections = %d, want 0: the index is no rejection", got)
	}
	serve(h, "GET", "/x", "")
	if got := counterSum(t, reader, "gateway.rejections"); got != 1 {
		t.Errorf("gateway.rejections after GET /x = %d, want 1 (no_route)", got)
	}
}

// counterSum is the total of the int64 counter name over every attribute set.
func counterSum(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range s.DataPoints {
					n += dp.Value
				}
			}
		}
	}
	return n
}

func TestWantsHTML(t *testing.T) {
	tests := []struct {
		accept []string
		want   bool
	}{
		{[]string{browserAccept}, true},
		{[]string{"text/html"}, true},
		{[]string{"application/json", "text/html"}, false},
		{[]string{"text/html;q=0.9, application/json;q=0.5"}, true},
		{[]string{"text/html;q=0"}, false},
		{[]string{"text/html;q=nonsense"}, false},
		{[]string{"*/*"}, false},
		{[]string{"text/*"}, false},
		{nil, false},
		{[]string{",,;;"}, false},
	}
	for _, tt := range tests {
		if got := wantsHTML(tt.accept); got != tt.want {
			t.Errorf("wantsHTML(%q) = %v, want %v", tt.accept, got, tt.want)
		}
	}
}
