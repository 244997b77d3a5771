package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/sqldb"
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
	srv   *httptest.Server
	live  *policy.Live
	table *policystore.Table
	// announced counts the announcements by subject.
	announced map[string]int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, testkit.OpenDBs(t, "gateway")[0])
}

// newFixtureOn is newFixture with its tables in db.
func newFixtureOn(t *testing.T, db *sqldb.DB) *fixture {
	t.Helper()
	live := newLive(t, doc)
	if err := db.Migrate(context.Background(), policystore.Migrations()); err != nil {
		t.Fatal(err)
	}
	f := &fixture{live: live, table: policystore.NewTable(db, clock.Clock{}), announced: map[string]int{}}
	f.srv = httptest.NewServer(New(Options{
		Live:      live,
		Upstreams: upstreams{{Name: "svc", Instances: []upstream.InstanceStatus{{URL: "http://127.0.0.1:1", Ready: true, InFlight: 2}}}},
		Tenants:   f.table,
		Edits:     f.table,
		Audit:     f.table,
		Replica:   "gw-test",
		Announce:  func(_ context.Context, subject string) error { f.announced[subject]++; return nil },
		Token:     "s3cret",
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// newLive runs the policy file doc.
func newLive(t *testing.T, doc string) *policy.Live {
	t.Helper()
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	live, err := policy.NewLive(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

func (f *fixture) do(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
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
		{"negative probe interval", "PATCH", "/admin/services/svc", `{"probe":{"interval":"-1s"}}`, 400, `"field":"services[svc].probe.interval"`},
		{"upstreams", "GET", "/admin/upstreams", "", 200, `"inFlight":2`},
		{"delete a limit", "DELETE", "/admin/limits/per-ip", "", 204, ""},
		{"delete it again", "DELETE", "/admin/limits/per-ip", "", 404, ""},
		{"tenant limit", "PUT", "/admin/tenant-limits/ten_a/holds", `{"capacity":3,"refill_per_second":0.5}`, 200, `"capacity":3`},
		{"tenant limit on no route", "PUT", "/admin/tenant-limits/ten_a/ghost", `{"capacity":3,"refill_per_second":1}`, 400, `"field":"route"`},
		{"tenant limit beyond exact arithmetic", "PUT", "/admin/tenant-limits/ten_a/holds", `{"capacity":9223372036854775807,"refill_per_second":1}`, 400, `"field":"capacity"`},
		{"tenant limit refilling never", "PUT", "/admin/tenant-limits/ten_a/holds", `{"capacity":3,"refill_per_second":0}`, 400, `"field":"refill_per_second"`},
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
	if r, ok := s.TenantOverride("ten_a", "holds"); !ok || r.Burst != 3 || f.announced[policystore.RulesChangedSubject] != 1 {
		t.Errorf("tenant override = %+v %v, announced %v; want burst 3, announced once on %s", r, ok, f.announced, policystore.RulesChangedSubject)
	}
	var pol struct{ Policy policy.Policy }
	_, body := f.do(t, "GET", "/admin/policy", "s3cret", "")
	if err := json.Unmarshal([]byte(body), &pol); err != nil || pol.Policy.Services[0].MaxInFlight != 7 {
		t.Errorf("GET /admin/policy = %s (%v), want max_in_flight 7", body, err)
	}
}

// TestAdminEditsAreStored follows edits into the policy_edit table, where the other replicas
// read them: a good edit is stored and announced, a rejected one never reaches the table,
// one this replica's hooks refuse is taken back, and DELETE /admin/edits empties it.
func TestAdminEditsAreStored(t *testing.T) {
	f := newFixture(t)
	// The upstream layer refuses a max_in_flight of 13 that the policy accepts.
	f.live.OnChange(func(s *policy.Snapshot) error {
		if s.Policy.Services[0].MaxInFlight == 13 {
			return errors.New("upstream: 13 in flight refused")
		}
		return nil
	})
	stored := func(t *testing.T) string {
		t.Helper()
		rows, err := f.table.LoadEdits(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range rows {
			out = append(out, fmt.Sprintf("%s %s patch=%v deleted=%v %s", e.Kind, e.ID, e.Patch, e.Deleted, e.Value))
		}
		return strings.Join(out, "\n")
	}
	steps := []struct {
		name, method, path, body string
		wantCode                 int
		// wantRows are what each stored row must contain, in kind and id order.
		wantRows  []string
		announced int
	}{
		{"patch a limit", "PATCH", "/admin/limits/holds-per-account", `{"mode":"shadow"}`, 200,
			[]string{`limit holds-per-account patch=true deleted=false {"mode":"shadow"}`}, 1},
		{"a rejected edit is not stored", "PUT", "/admin/limits/holds-per-account", `{"key":"user","rate":"many"}`, 400,
			[]string{`"mode":"shadow"`}, 1},
		{"a service", "PATCH", "/admin/services/svc", `{"max_in_flight":7}`, 200,
			[]string{`"mode":"shadow"`, `service svc patch=true deleted=false {"max_in_flight":7}`}, 2},
		{"refused by a hook: the row it replaced is back", "PATCH", "/admin/services/svc", `{"max_in_flight":13}`, 500,
			[]string{`"mode":"shadow"`, `"max_in_flight":7`}, 2},
		{"delete a limit", "DELETE", "/admin/limits/holds-per-account", "", 204,
			[]string{`limit holds-per-account patch=false deleted=true`, `"max_in_flight":7`}, 3},
		{"drop one edit: the limit is the file's again", "DELETE", "/admin/edits/limit/holds-per-account", "", 204,
			[]string{`"max_in_flight":7`}, 4},
		{"drop an edit that is not there: nothing changes", "DELETE", "/admin/edits/limit/holds-per-account", "", 204,
			[]string{`"max_in_flight":7`}, 5},
		{"drop an edit of an unknown kind", "DELETE", "/admin/edits/tenant/acme", "", 400,
			[]string{`"max_in_flight":7`}, 5},
		{"back to the file", "DELETE", "/admin/edits", "", 204, nil, 6},
		{"refused by a hook with no row before: none after", "PATCH", "/admin/services/svc", `{"max_in_flight":13}`, 500, nil, 6},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if code, body := f.do(t, st.method, st.path, "s3cret", st.body); code != st.wantCode {
				t.Errorf("%s %s = %d %s, want %d", st.method, st.path, code, body, st.wantCode)
			}
			rows := stored(t)
			lines := strings.Split(rows, "\n")
			if rows == "" {
				lines = nil
			}
			if len(lines) != len(st.wantRows) {
				t.Fatalf("stored edits:\n%s\nwant %d rows like %q", rows, len(st.wantRows), st.wantRows)
			}
			for i, want := range st.wantRows {
				if !strings.Contains(lines[i], want) {
					t.Errorf("stored edit %d = %s, want it to contain %s", i, lines[i], want)
				}
			}
			if got := f.announced[policystore.PolicyChangedSubject]; got != st.announced {
				t.Errorf("announcements on %s = %d, want %d", policystore.PolicyChangedSubject, got, st.announced)
			}
			if held := len(f.live.Edits()); held != len(st.wantRows) {
				t.Errorf("edits held by the replica = %d, want the %d stored", held, len(st.wantRows))
			}
		})
	}
	s := f.live.Current()
	if l := s.Limit("holds-per-account"); l == nil || l.Rule.Mode != ratelimit.Enforce || len(s.Route("holds").Limits) != 1 || len(f.live.Edits()) != 0 {
		t.Errorf("after DELETE /admin/edits, limit %+v, route holds limits %d, edits %d; want the file's limit, on its route, and no edits",
			l, len(s.Route("holds").Limits), len(f.live.Edits()))
	}
}

// TestAdminShowsSkippedEdits writes a row this replica cannot apply, as another replica on
// another policy file could, and finds it named in GET /admin/policy and listed by GET
// /admin/edits.
func TestAdminShowsSkippedEdits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bad := policy.RouteEdit(policy.Route{ID: "pay", Match: policy.Match{Path: "/v1/pay"}, Service: "payment", Auth: policy.AuthNone})
	if err := f.table.PutEdit(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := f.table.Reload(ctx, f.live); err != nil {
		t.Fatal(err)
	}
	if code, body := f.do(t, "GET", "/admin/policy", "s3cret", ""); code != 200 || !strings.Contains(body, `"skipped_edits":["policy_edit (route, pay): routes[pay].service`) {
		t.Errorf("GET /admin/policy = %d %s, want the route edit named in skipped_edits", code, body)
	}
	if code, body := f.do(t, "GET", "/admin/edits", "s3cret", ""); code != 200 || !strings.Contains(body, `"kind":"route","id":"pay"`) {
		t.Errorf("GET /admin/edits = %d %s, want the stored row", code, body)
	}
}
