package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/testkit"
)

const doc = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: holds, match: {method: POST, path: "/v1/events/{id}/holds"}, service: svc, auth: user, limits: [holds-per-account]}
limits:
  - {id: holds-per-account, key: user, rate: 5/1m, burst: 5}
`

type upstreams []upstream.ServiceStatus

func (u upstreams) Snapshot() []upstream.ServiceStatus { return u }

type fixture struct {
	srv       *httptest.Server
	live      *policy.Live
	announced int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	live, err := policy.NewLive(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := testkit.OpenDBs(t, "gateway")[0]
	if err := db.Migrate(context.Background(), policy.Migrations()); err != nil {
		t.Fatal(err)
	}
	f := &fixture{live: live}
	f.srv = httptest.NewServer(New(Options{
		Live:      live,
		Upstreams: upstreams{{Name: "svc", Instances: []upstream.InstanceStatus{{URL: "http://127.0.0.1:1", Ready: true, InFlight: 2}}}},
		Tenants:   policy.NewTable(db, nil),
		Announce:  func(context.Context) error { f.announced++; return nil },
		Token:     "s3cret",
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) do(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminNeedsTheToken(t *testing.T) {
	f := newFixture(t)
	for _, token := range []string{"", "wrong", "s3cret-but-longer"} {
		if code, _ := f.do(t, "GET", "/admin/limits", token, ""); code != http.StatusUnauthorized {
			t.Errorf("GET /admin/limits with token %q = %d, want 401", token, code)
		}
	}
	if code, _ := f.do(t, "GET", "/admin/limits", "s3cret", ""); code != http.StatusOK {
		t.Errorf("GET /admin/limits with the token = %d, want 200", code)
	}
}

func TestAdminAPI(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		wantIn                   string
	}{
		{"list limits", "GET", "/admin/limits", "", 200, `"id":"holds-per-account"`},
		{"get one limit", "GET", "/admin/limits/holds-per-account", "", 200, `"rate":"5/1m"`},
		{"unknown limit", "GET", "/admin/limits/nope", "", 404, ""},
		{"put with a bad rate names the field", "PUT", "/admin/limits/holds-per-account", `{"key":"user","rate":"many"}`, 400, `"field":"rate"`},
		{"put with an unknown field", "PUT", "/admin/limits/holds-per-account", `{"key":"user","rate":"5/1m","brust":3}`, 400, "brust"},
		{"put a new limit", "PUT", "/admin/limits/per-ip", `{"key":"ip","rate":"10/s"}`, 200, `"algorithm":"token_bucket"`},
		{"patch to shadow", "PATCH", "/admin/limits/holds-per-account", `{"mode":"shadow"}`, 200, `"mode":"shadow"`},
		{"attach a limit to a route", "PATCH", "/admin/routes/holds", `{"limits":["holds-per-account","per-ip"],"response_timeout":"2s"}`, 200, `"per-ip"`},
		{"route to an unknown limit", "PATCH", "/admin/routes/holds", `{"limits":["ghost"]}`, 400, `"field":"routes[holds].limits[0]"`},
		{"service knobs", "PATCH", "/admin/services/svc", `{"max_in_flight":7}`, 200, `"max_in_flight":7`},
		{"retry budget", "PATCH", "/admin/services/svc", `{"retry_budget":{"ratio":0.1,"window":"5s"}}`, 200, `"retry_budget":{"ratio":0.1,"min_per_second":10,"window":"5s"}`},
		{"retry budget off", "PATCH", "/admin/services/svc", `{"retry_budget":{"unlimited":true}}`, 200, `"window":"5s","unlimited":true}`},
		{"retry ratio above 1", "PATCH", "/admin/services/svc", `{"retry_budget":{"ratio":2}}`, 400, `"field":"services[svc].retry_budget.ratio"`},
		{"negative retry floor", "PATCH", "/admin/services/svc", `{"retry_budget":{"min_per_second":-1}}`, 400, `"field":"services[svc].retry_budget.min_per_second"`},
		{"upstreams", "GET", "/admin/upstreams", "", 200, `"inFlight":2`},
		{"delete a limit", "DELETE", "/admin/limits/per-ip", "", 204, ""},
		{"delete it again", "DELETE", "/admin/limits/per-ip", "", 404, ""},
		{"tenant limit", "PUT", "/admin/tenant-limits/ten_a/holds", `{"capacity":3,"refill_per_second":0.5}`, 200, `"capacity":3`},
		{"tenant limit on no route", "PUT", "/admin/tenant-limits/ten_a/ghost", `{"capacity":3,"refill_per_second":1}`, 400, `"field":"route"`},
		{"tenant limits", "GET", "/admin/tenant-limits", "", 200, `"tenant":"ten_a"`},
		{"policy", "GET", "/admin/policy", "", 200, `"tenant_limits":[{"tenant":"ten_a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.do(t, tt.method, tt.path, "s3cret", tt.body)
			if code != tt.wantCode || !strings.Contains(body, tt.wantIn) {
				t.Errorf("%s %s = %d %s, want %d containing %s", tt.method, tt.path, code, body, tt.wantCode, tt.wantIn)
			}
		})
	}
	s := f.live.Current()
	if got := s.Limit("holds-per-account").Rule.Mode; got != ratelimit.Shadow {
		t.Errorf("holds-per-account mode = %q, want shadow", got)
	}
	if rt := s.Route("holds"); len(rt.Limits) != 1 || rt.ResponseTimeout.Seconds() != 2 {
		t.Errorf("route holds = %d limits, response timeout %v; want per-ip deleted off it and 2s", len(rt.Limits), rt.ResponseTimeout)
	}
	if rb := s.Policy.Services[0].RetryBudget; rb.Ratio != 0.1 || rb.Window.D().Seconds() != 5 || !rb.Unlimited {
		t.Errorf("service svc retry_budget = %+v, want ratio 0.1, window 5s, unlimited", rb)
	}
	if r, ok := s.TenantOverride("ten_a", "holds"); !ok || r.Burst != 3 || f.announced != 1 {
		t.Errorf("tenant override = %+v %v, announced %d; want burst 3, announced once", r, ok, f.announced)
	}
	var pol struct{ Policy policy.Policy }
	_, body := f.do(t, "GET", "/admin/policy", "s3cret", "")
	if err := json.Unmarshal([]byte(body), &pol); err != nil || pol.Policy.Services[0].MaxInFlight != 7 {
		t.Errorf("GET /admin/policy = %s (%v), want max_in_flight 7", body, err)
	}
}
