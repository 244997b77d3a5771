package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
)

// forwarded records what the pipeline handed to the upstream layer.
type forwarded struct {
	service string
	path    string
	ro      upstream.RouteOptions
}

type recordingForwarder struct{ last *forwarded }

func (f *recordingForwarder) Forward(w http.ResponseWriter, r *http.Request, service string, ro upstream.RouteOptions) {
	*f.last = forwarded{service: service, path: r.URL.Path, ro: ro}
	w.WriteHeader(http.StatusNoContent)
}

// liveOf is the running policy of doc, a policy file.
func liveOf(tb testing.TB, doc string) *policy.Live {
	tb.Helper()
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		tb.Fatal(err)
	}
	live, err := policy.NewLive(p, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return live
}

// TestPipelineRouteOptions checks what the pipeline asks of the upstream layer: the
// route's timeouts, the path after strip_prefix, and a retry only for idempotent methods or
// requests carrying an Idempotency-Key, on routes that allow retries.
func TestPipelineRouteOptions(t *testing.T) {
	live := liveOf(t, `
settings: {connect_timeout: 300ms, response_timeout: 4s}
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: things, match: {path: "/v1/things/{rest...}"}, service: svc, auth: none, response_timeout: 9s}
  - {id: once, match: {method: POST, path: /v1/once}, service: svc, auth: none, retry: false}
  - {id: partner, match: {method: GET, path: /partner/v1/x}, service: svc, auth: none, strip_prefix: /partner}
`)
	m, _ := newMetrics(nil)
	var last forwarded
	g := &gateway{
		live: live, auth: &authn.Authenticator{}, enforcer: limits.NewEnforcer(ratelimit.NewMemory(clock.Clock{}), nil, nil),
		upstream: &recordingForwarder{last: &last}, log: logging.Discard(), metrics: m, now: time.Now,
		newTrace: func() (trace.TraceID, trace.SpanID) { return trace.TraceID{1}, trace.SpanID{1} },
	}
	h := g.handler()
	tests := []struct {
		name, method, path string
		idempotencyKey     string
		want               forwarded
	}{
		{"GET retries", "GET", "/v1/things/a", "", forwarded{"svc", "/v1/things/a", upstream.RouteOptions{ConnectTimeout: 300 * time.Millisecond, ResponseTimeout: 9 * time.Second, Retry: true}}},
		{"POST does not", "POST", "/v1/things/a", "", forwarded{"svc", "/v1/things/a", upstream.RouteOptions{ConnectTimeout: 300 * time.Millisecond, ResponseTimeout: 9 * time.Second}}},
		{"POST with an Idempotency-Key does", "POST", "/v1/things/a", "k-1", forwarded{"svc", "/v1/things/a", upstream.RouteOptions{ConnectTimeout: 300 * time.Millisecond, ResponseTimeout: 9 * time.Second, Retry: true}}},
		{"DELETE retries", "DELETE", "/v1/things/a", "", forwarded{"svc", "/v1/things/a", upstream.RouteOptions{ConnectTimeout: 300 * time.Millisecond, ResponseTimeout: 9 * time.Second, Retry: true}}},
		{"a route without retries", "POST", "/v1/once", "k-1", forwarded{"svc", "/v1/once", upstream.RouteOptions{ConnectTimeout: 300 * time.Millisecond, ResponseTimeout: 4 * time.Second}}},
		{"strip prefix", "GET", "/partner/v1/x", "", forwarded{"svc", "/v1/x", upstream.RouteOptions{ConnectTimeout: 300 * time.Millisecond, ResponseTimeout: 4 * time.Second, Retry: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last = forwarded{}
			r := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.idempotencyKey != "" {
				r.Header.Set("Idempotency-Key", tt.idempotencyKey)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if last != tt.want {
				t.Errorf("%s %s forwarded %+v, want %+v", tt.method, tt.path, last, tt.want)
			}
			if got := w.Header().Get("X-Request-Id"); got != (trace.TraceID{1}).String() {
				t.Errorf("X-Request-Id = %q, want the trace id", got)
			}
		})
	}
}

func TestValidRequestID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"req-42_a.B", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"has space", false},
		{"line\nbreak", false},
		{"é", false},
		{"a/b", false},
	}
	for _, tt := range tests {
		if got := validRequestID(tt.id); got != tt.want {
			t.Errorf("validRequestID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

// TestMatchRoute calls the route step alone, with a policy snapshot for input: the route
// found, the path forwarded, and the outcome and status of what it answers itself.
func TestMatchRoute(t *testing.T) {
	snap := liveOf(t, `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: public, match: {method: GET, path: "/v1/public/{rest...}"}, service: svc, auth: none}
  - {id: admin, match: {method: GET, path: /v1/admin}, service: svc, auth: user}
  - {id: partner, match: {method: GET, path: /partner/v1/x}, service: svc, auth: none, strip_prefix: /partner}
`).Current()
	g := &gateway{}
	tests := []struct {
		name, method, target string
		wantRoute, wantPath  string
		wantOutcome          outcome
		wantStatus           int
	}{
		{"a route", "GET", "/v1/public/a", "public", "/v1/public/a", proceed, 0},
		{"dot segments cleaned first", "GET", "/v1/public/%2e%2e/admin", "admin", "/v1/admin", proceed, 0},
		{"prefix stripped", "GET", "/partner/v1/x", "partner", "/v1/x", proceed, 0},
		{"an encoded slash", "GET", "/v1/public/a%2fb", "", "", outcomeBadPath, http.StatusBadRequest},
		{"no route", "GET", "/v1/nothing", "", "", outcomeNoRoute, http.StatusNotFound},
		{"wrong method", "POST", "/v1/admin", "", "", outcomeMethod, http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			w := httptest.NewRecorder()
			rt, out := g.matchRoute(w, r, snap)
			if out != tt.wantOutcome {
				t.Fatalf("matchRoute(%s %s) outcome = %q, want %q", tt.method, tt.target, out, tt.wantOutcome)
			}
			if out != proceed {
				if rt != nil || w.Code != tt.wantStatus {
					t.Errorf("matchRoute(%s %s) = route %v, status %d, want no route, %d", tt.method, tt.target, rt, w.Code, tt.wantStatus)
				}
				return
			}
			if rt == nil || rt.ID != tt.wantRoute || r.URL.Path != tt.wantPath {
				t.Errorf("matchRoute(%s %s) = route %v, path %q, want %s, %q", tt.method, tt.target, rt, r.URL.Path, tt.wantRoute, tt.wantPath)
			}
		})
	}
}
