package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSystem is a gateway, its admin API and one catalog instance's control hook and
// metrics on one test server. It records every change the runner makes. Like the gateway,
// it stores each admin change as an edit over its policy file (fileRouteLimits, no limit
// lim), and dropping an edit puts the element back as the file has it.
type fakeSystem struct {
	mu              sync.Mutex
	fileRouteLimits []string
	routeLimits     []string
	limits          map[string]string // id → last PUT body
	deleted         []string
	edits           map[string]string // "kind/id" → the stored value, or "deleted"
	dropped         []string          // DELETE /admin/edits/{kind}/{id}, as "kind/id"
	control         []string          // PUT /control bodies
	budgets         []string          // PATCH /admin/services/catalog bodies
	sawXFF          bool
	decided         int             // requests to /v1/events: each one decision of the store, on /metrics
	actors          map[string]bool // the Admin-Actor header of every admin write
}

func newFakeSystem(routeLimits ...string) *fakeSystem {
	return &fakeSystem{fileRouteLimits: routeLimits, routeLimits: routeLimits, limits: map[string]string{}, edits: map[string]string{}}
}

func (f *fakeSystem) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if strings.HasPrefix(r.URL.Path, "/admin/") && r.Method != http.MethodGet {
		if f.actors == nil {
			f.actors = map[string]bool{}
		}
		f.actors[r.Header.Get("Admin-Actor")] = true
	}
	switch {
	case r.URL.Path == "/admin/audit" && r.Method == http.MethodGet:
		// The trail holds one change of run r7's; a query for another actor finds nothing.
		changes := []map[string]any{}
		if r.URL.Query().Get("actor") == "admin:playground/r7" {
			changes = append(changes, map[string]any{"change_id": "chg_1", "actor": "admin:playground/r7", "kind": "limit", "id": "lim", "action": "put"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"changes": changes})
	case r.URL.Path == "/v1/events":
		f.decided++
		f.sawXFF = f.sawXFF || strings.HasPrefix(r.Header.Get("X-Forwarded-For"), "10.")
		if slices.Contains(f.routeLimits, "lim") {
			w.WriteHeader(429)
			_, _ = io.WriteString(w, `{"violated-policies":["lim"]}`)
		}
	case r.URL.Path == "/admin/routes/events" && r.Method == http.MethodGet:
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "events", "limits": f.routeLimits})
	case r.URL.Path == "/admin/routes/events" && r.Method == http.MethodPatch:
		var b struct{ Limits []string }
		_ = json.Unmarshal(body, &b)
		f.routeLimits = b.Limits
		f.edits["route/events"] = string(body)
	case r.URL.Path == "/admin/limits/lim" && r.Method == http.MethodGet:
		l, ok := f.limits["lim"]
		if !ok {
			http.NotFound(w, r)
		}
		_, _ = io.WriteString(w, l)
	case r.URL.Path == "/admin/limits/lim" && r.Method == http.MethodPut:
		f.limits["lim"] = string(body)
		f.edits["limit/lim"] = string(body)
	case r.URL.Path == "/admin/limits/lim" && r.Method == http.MethodDelete:
		delete(f.limits, "lim")
		f.deleted = append(f.deleted, "lim")
		f.edits["limit/lim"] = "deleted"
	case r.URL.Path == "/admin/edits" && r.Method == http.MethodGet:
		var list []map[string]any
		for key, v := range f.edits {
			kind, id, _ := strings.Cut(key, "/")
			if v == "deleted" {
				list = append(list, map[string]any{"kind": kind, "id": id, "deleted": true})
			} else {
				list = append(list, map[string]any{"kind": kind, "id": id, "value": json.RawMessage(v)})
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"edits": list})
	case strings.HasPrefix(r.URL.Path, "/admin/edits/") && r.Method == http.MethodDelete:
		key := strings.TrimPrefix(r.URL.Path, "/admin/edits/")
		delete(f.edits, key)
		f.dropped = append(f.dropped, key)
		switch key {
		case "route/events":
			f.routeLimits = f.fileRouteLimits
		case "limit/lim":
			delete(f.limits, "lim")
		}
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/admin/services/catalog" && r.Method == http.MethodGet:
		_, _ = io.WriteString(w, `{"name":"catalog","max_in_flight":400,"retry_budget":{"ratio":0.2,"min_per_second":10,"window":"10s"}}`)
	case r.URL.Path == "/admin/services/catalog" && r.Method == http.MethodPatch:
		f.budgets = append(f.budgets, strings.TrimSpace(string(body)))
		f.edits["service/catalog"] = string(body)
	case r.URL.Path == "/admin/upstreams" && r.Method == http.MethodGet:
		_, _ = io.WriteString(w, `{"services":[{"name":"auth","concurrencyLimit":200,"inFlight":0},{"name":"catalog","concurrencyLimit":8,"inFlight":3}]}`)
	case r.URL.Path == "/control" && r.Method == http.MethodGet:
		_, _ = io.WriteString(w, `{"latency_ms":0,"error_rate":0,"outage":false,"max_concurrent":0,"service_time_ms":0}`)
	case r.URL.Path == "/control" && r.Method == http.MethodPut:
		f.control = append(f.control, string(body))
	case r.URL.Path == "/metrics": // the backend's and the gateway's in one
		_, _ = io.WriteString(w, "boxoffice_control_in_flight{service=\"catalog\"} 2\nboxoffice_control_max_concurrent{service=\"catalog\"} 4\n")
		_, _ = fmt.Fprintf(w, "ratelimit_decisions_total{outcome=\"allowed\",path=\"store\",rule=\"api-per-ip\"} %d\n", f.decided)
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
	}
}

const fakeScenario = `
name: fake
title: Fake
explainer: E
docs: docs/x.md
driver: request
request: {method: GET, path: /v1/events, route: events}
backend: {service: catalog, max_concurrent: 4, service_time: 10ms}
limit: {id: lim}
streams: [{name: clients, identity: ip, count: 5}]
knobs:
  - {name: limit, kind: bool, default: "false"}
  - {name: rate, kind: int, default: "50"}
  - {name: capacity, kind: int, default: "4"}
profiles:
  - name: p
    phases:
      - {name: open, duration: 2s, rate: 40}
      - {name: limited, duration: 2s, rate: 40, knobs: {limit: "true"}}
    expect:
      - {name: the limit refuses, left: {metric: too_many_ratio, phase: limited}, op: ">=", value: 0.9}
      - {name: nothing refused before, left: {metric: too_many, phase: open}, op: "==", value: 0}
`

func TestRunTurnsKnobsSamplesAndPutsBack(t *testing.T) {
	sys := newFakeSystem("api-per-ip")
	srv := httptest.NewServer(sys)
	defer srv.Close()
	sc, err := Parse([]byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	target := Target{Gateway: srv.URL, Admin: srv.URL, AdminToken: "t", Services: map[string][]string{"catalog": {srv.URL}}}

	run, err := Start(context.Background(), sc, "", target, Options{Actor: "playground/r7"})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	samples, cancel := run.Subscribe()
	defer cancel()
	first := <-samples
	if first.Sent == 0 || first.BackendInFlight != 2 || first.BackendCapacity != 4 {
		t.Errorf("first sample = %+v, want requests sent and the backend's 2 in flight of 4", first)
	}
	if err := run.SetKnob(context.Background(), "rate", "7"); err != nil {
		t.Fatalf("SetKnob(rate, 7) = %v", err)
	}
	if err := run.SetKnob(context.Background(), "rate", "lots"); err == nil {
		t.Error("SetKnob(rate, lots) = nil, want an error: rate is an int")
	}
	sys.mu.Lock()
	if got := sys.limits["lim"]; !strings.Contains(got, `"rate":"7/s"`) {
		t.Errorf("limit after SetKnob(rate, 7) = %s, want rate 7/s", got)
	}
	sys.mu.Unlock()

	<-run.Done()
	res := run.Result()
	if !res.Passed() {
		t.Errorf("result = %+v, want every expectation met", res.Expectations)
	}
	// The run names itself in every admin write, and lists what the trail recorded of it.
	sys.mu.Lock()
	if !maps.Equal(sys.actors, map[string]bool{"playground/r7": true}) {
		t.Errorf("Admin-Actor of the admin writes = %v, want playground/r7 on each", sys.actors)
	}
	sys.mu.Unlock()
	if len(res.Audit) != 1 || res.Audit[0].ChangeID != "chg_1" || res.Audit[0].Actor != "admin:playground/r7" {
		t.Errorf("Result.Audit = %+v, want the trail's one change of the run", res.Audit)
	}
	if len(res.Series) < 4 || len(res.Phases) != 2 {
		t.Errorf("series %d seconds, %d phases; want at least 4 and 2", len(res.Series), len(res.Phases))
	}
	var knobs []string
	for _, e := range res.Events {
		if e.Kind == "knob" {
			knobs = append(knobs, e.What)
		}
	}
	if want := []string{"rate = 7 (set by hand)", "limit = true (phase limited)"}; !slices.Equal(knobs, want) {
		t.Errorf("knob events = %q, want %q", knobs, want)
	}
	if got := res.Totals.Counters["429:lim"]; got == 0 {
		t.Error("no 429 counted by the policy its body names")
	}
	// The gateway's decisions by path, read from its admin /metrics every second: one per
	// request here, all by the store.
	decided := 0.0
	for _, smp := range res.Series {
		decided += smp.Decisions["store"]
		if len(smp.Decisions) > 1 {
			t.Errorf("second %d: decisions %v, want the store's only", smp.T, smp.Decisions)
		}
	}
	if decided == 0 || res.Totals.Decisions["store"] != decided {
		t.Errorf("decisions by the store: %v over the seconds, %v in the totals; want some, the same in both", decided, res.Totals.Decisions["store"])
	}

	sys.mu.Lock()
	defer sys.mu.Unlock()
	if !slices.Equal(sys.routeLimits, []string{"api-per-ip"}) {
		t.Errorf("route limits after the run = %v, want them as found: [api-per-ip]", sys.routeLimits)
	}
	if _, ok := sys.limits["lim"]; ok || len(sys.edits) != 0 {
		t.Errorf("after the run, limit lim %q and edits %v; want the run's own limit gone and no edit left", sys.limits["lim"], sys.edits)
	}
	slices.Sort(sys.dropped)
	if want := []string{"limit/lim", "route/events"}; !slices.Equal(sys.dropped, want) {
		t.Errorf("edits dropped = %v, want %v: the elements follow the policy file again", sys.dropped, want)
	}
	if n := len(sys.control); n < 2 || !strings.Contains(sys.control[0], `"max_concurrent":4`) || !strings.Contains(sys.control[n-1], `"max_concurrent":0`) {
		t.Errorf("control PUTs = %v, want capacity 4 first and the knobs as found (0) last", sys.control)
	}
	if !sys.sawXFF {
		t.Error("no request carried a fake client IP in X-Forwarded-For")
	}
}

// An element an instructor had already edited gets that edit back after a run, not the
// policy file's value: the run undoes only its own change.
func TestRunPutsBackAnEditItFound(t *testing.T) {
	sys := newFakeSystem("api-per-ip")
	prior := `{"id":"lim","key":"ip","algorithm":"gcra","rate":"9/s"}`
	sys.limits["lim"], sys.edits["limit/lim"] = prior, prior
	srv := httptest.NewServer(sys)
	defer srv.Close()
	sc, err := Parse([]byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Start(context.Background(), sc, "", Target{Gateway: srv.URL, Admin: srv.URL, AdminToken: "t", Services: map[string][]string{"catalog": {srv.URL}}}, Options{})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	<-run.Done()
	sys.mu.Lock()
	defer sys.mu.Unlock()
	if got := sys.edits["limit/lim"]; got != prior || sys.limits["lim"] != prior {
		t.Errorf("limit lim after the run = %s (edit %s), want the instructor's edit %s back", sys.limits["lim"], got, prior)
	}
	if !slices.Equal(sys.dropped, []string{"route/events"}) {
		t.Errorf("edits dropped = %v, want only the route's, which had none before the run", sys.dropped)
	}
}

func TestStopEndsTheRunEarly(t *testing.T) {
	sys := newFakeSystem()
	srv := httptest.NewServer(sys)
	defer srv.Close()
	sc, _ := Parse([]byte(fakeScenario))
	run, err := Start(context.Background(), sc, "p", Target{Gateway: srv.URL, Admin: srv.URL, Services: map[string][]string{"catalog": {srv.URL}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	run.Stop()
	select {
	case <-run.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not end within 5s of Stop")
	}
	res := run.Result()
	if !res.Stopped || res.Passed() || len(res.Expectations) != 0 {
		t.Errorf("stopped run: Stopped %v, Passed %v, %d expectations; want stopped, not passed, none checked", res.Stopped, res.Passed(), len(res.Expectations))
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("Stop took %v", time.Since(start))
	}
	if _, ok := <-func() <-chan Sample { ch, _ := run.Subscribe(); return ch }(); ok {
		t.Error("Subscribe after the end returned an open channel with a sample, want a closed one")
	}
}

// runOnFakeSystem runs the one profile of the scenario doc against a fake system (gateway,
// admin API and backend in one) and returns the system and the result once the run is over,
// having checked that every expectation was met.
func runOnFakeSystem(t *testing.T, doc string) (*fakeSystem, Result) {
	t.Helper()
	sys := newFakeSystem()
	return sys, runOn(t, doc, sys, Target{}, Options{})
}

// runOn runs the one profile of the scenario doc against h, which serves as gateway and
// admin API beside what t already names, with o, and returns the result once the run is
// over, having checked that every expectation was met.
func runOn(t *testing.T, doc string, h http.Handler, target Target, o Options) Result {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	sc, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	target.Gateway, target.Admin, target.AdminToken = srv.URL, srv.URL, "t"
	run, err := Start(context.Background(), sc, "", target, o)
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	<-run.Done()
	res := run.Result()
	if !res.Passed() {
		t.Errorf("result = %+v, want every expectation met", res.Expectations)
	}
	return res
}

// startOnFake starts the scenario doc's first profile against h, which serves as gateway,
// admin API and the catalog's one instance, and stops the run when the test ends.
func startOnFake(t *testing.T, doc string, h http.Handler, o Options) *Run {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	sc, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	target := Target{Gateway: srv.URL, Admin: srv.URL, AdminToken: "t", Services: map[string][]string{"catalog": {srv.URL}}}
	run, err := Start(context.Background(), sc, "", target, o)
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	t.Cleanup(func() { run.Stop(); <-run.Done() })
	return run
}

// catalogScenario is the start of a scenario against the fake system's catalog: name, title
// and knobs follow.
const catalogScenario = `
explainer: E
docs: docs/x.md
driver: request
request: {method: GET, path: /v1/events, route: events}
backend: {service: catalog, max_concurrent: 4, service_time: 10ms}
streams: [{name: clients, identity: ip, count: 5}]
`

const budgetScenario = catalogScenario + `name: budget
title: Budget
knobs:
  - {name: gateway_retry_budget, kind: enum, options: ["off", "20%", "10%+1/s"], default: "20%"}
profiles:
  - name: p
    phases:
      - {name: storm, duration: 1s, rate: 10, knobs: {gateway_retry_budget: "off"}}
      - {name: tight, duration: 1s, rate: 10, knobs: {gateway_retry_budget: "10%+1/s"}}
    expect:
      - {name: nothing refused, left: {metric: too_many, phase: storm}, op: "==", value: 0}
`

// TestGatewayRetryBudgetKnob checks that each value of the knob becomes a PATCH of the
// backend service's retry_budget, read over the budget the run found, and that the run puts
// that budget back at the end by dropping its edit.
func TestGatewayRetryBudgetKnob(t *testing.T) {
	sys, _ := runOnFakeSystem(t, budgetScenario)
	want := []string{
		// The first phase's value is in force from the start: no PATCH for the default.
		`{"retry_budget":{"ratio":0.2,"min_per_second":10,"window":"10s","unlimited":true}}`,
		`{"retry_budget":{"ratio":0.1,"min_per_second":1,"window":"10s","unlimited":false}}`,
	}
	sys.mu.Lock()
	defer sys.mu.Unlock()
	if !slices.Equal(sys.budgets, want) {
		t.Errorf("PATCH /admin/services/catalog bodies =\n%s\nwant\n%s", strings.Join(sys.budgets, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(sys.dropped, []string{"service/catalog"}) || len(sys.edits) != 0 {
		t.Errorf("edits dropped = %v, left = %v; want the service's edit dropped, none left", sys.dropped, sys.edits)
	}
}

func TestParseRetryBudget(t *testing.T) {
	found := retryBudget{Ratio: 0.2, MinPerSecond: 10, Window: "10s", Unlimited: true}
	tests := []struct {
		in      string
		want    retryBudget
		wantErr bool
	}{
		{in: "off", want: retryBudget{Ratio: 0.2, MinPerSecond: 10, Window: "10s", Unlimited: true}},
		{in: "20%", want: retryBudget{Ratio: 0.2, MinPerSecond: 10, Window: "10s"}},
		{in: "5%", want: retryBudget{Ratio: 0.05, MinPerSecond: 10, Window: "10s"}},
		{in: "100%", want: retryBudget{Ratio: 1, MinPerSecond: 10, Window: "10s"}},
		{in: "10%+1/s", want: retryBudget{Ratio: 0.1, MinPerSecond: 1, Window: "10s"}},
		{in: "10%+0.5/s", want: retryBudget{Ratio: 0.1, MinPerSecond: 0.5, Window: "10s"}},
		{in: "0%", wantErr: true},
		{in: "150%", wantErr: true},
		{in: "0.2", wantErr: true},
		{in: "20", wantErr: true},
		{in: "on", wantErr: true},
		{in: "10%+1", wantErr: true},
		{in: "10%+0/s", wantErr: true},
		{in: "10%+x/s", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseRetryBudget(tt.in, found)
			switch {
			case tt.wantErr && err == nil:
				t.Errorf("parseRetryBudget(%q) = %+v, want an error", tt.in, got)
			case !tt.wantErr && (err != nil || got != tt.want):
				t.Errorf("parseRetryBudget(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

const concurrencyScenario = catalogScenario + `name: concurrency
title: Concurrency
knobs:
  - {name: gateway_max_in_flight, kind: int, default: "0"}
  - {name: gateway_adaptive, kind: enum, options: [policy, "off", 200ms], default: policy}
counters:
  - {name: gateway_concurrency_limit, label: L, kind: gauge}
  - {name: gateway_in_flight, label: F, kind: gauge}
profiles:
  - name: p
    phases:
      - {name: fixed, duration: 1s, rate: 10, knobs: {gateway_max_in_flight: "8"}}
      - {name: adaptive, duration: 1s, rate: 10, knobs: {gateway_max_in_flight: "32", gateway_adaptive: 200ms}}
      - {name: as-found, duration: 1s, rate: 10, knobs: {gateway_max_in_flight: "0", gateway_adaptive: policy}}
    expect:
      - {name: nothing refused, left: {metric: too_many, phase: fixed}, op: "==", value: 0}
`

// TestGatewayConcurrencyKnobs checks that the knobs become PATCHes of the backend service's
// max_in_flight and adaptive_concurrency, and that the run puts the service back at the end
// by dropping its edit.
func TestGatewayConcurrencyKnobs(t *testing.T) {
	sys, res := runOnFakeSystem(t, concurrencyScenario)
	// The seconds show the backend service's limit and load at the gateway. (A second whose
	// poll missed its deadline on a loaded machine has none, which is no fault of the poll.)
	polled := 0
	for _, smp := range res.Series {
		got := smp.Counters
		if len(got) == 0 {
			continue
		}
		polled++
		if got[counterGatewayLimit] != 8 || got[counterGatewayInFlight] != 3 {
			t.Errorf("second %d: counters %v, want %s 8 and %s 3", smp.T, got, counterGatewayLimit, counterGatewayInFlight)
		}
	}
	if polled == 0 {
		t.Errorf("no second of %d shows the gateway's counters", len(res.Series))
	}
	sys.mu.Lock()
	defer sys.mu.Unlock()
	want := []string{
		`{"max_in_flight":8,"adaptive_concurrency":null}`,
		// Both knobs of a phase in one PATCH: the limit never starts from the old ceiling.
		`{"max_in_flight":32,"adaptive_concurrency":{"latency_target":"200ms","min_in_flight":2}}`,
		`{"max_in_flight":400,"adaptive_concurrency":null}`, // as found
	}
	if !slices.Equal(sys.budgets, want) {
		t.Errorf("PATCH /admin/services/catalog bodies =\n%s\nwant\n%s", strings.Join(sys.budgets, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(sys.dropped, []string{"service/catalog"}) || len(sys.edits) != 0 {
		t.Errorf("edits dropped = %v, left = %v; want the service's edit dropped, none left", sys.dropped, sys.edits)
	}

	// Knobs left as found change nothing on the gateway.
	untouched := strings.Replace(concurrencyScenario, `knobs: {gateway_max_in_flight: "8"}`, `knobs: {}`, 1)
	untouched = untouched[:strings.Index(untouched, "      - {name: adaptive")] + untouched[strings.Index(untouched, "    expect:"):]
	sys, _ = runOnFakeSystem(t, untouched)
	sys.mu.Lock()
	defer sys.mu.Unlock()
	if len(sys.budgets) != 0 {
		t.Errorf("knobs never turned: PATCH bodies %q, want none", sys.budgets)
	}
}

func TestParseAdaptive(t *testing.T) {
	for _, v := range []string{"off", "200ms", "1s"} {
		if _, err := parseAdaptive(v); err != nil {
			t.Errorf("parseAdaptive(%q) = %v, want nil", v, err)
		}
	}
	if a, _ := parseAdaptive("250ms"); a == nil || a.LatencyTarget != "250ms" || a.MinInFlight != adaptiveFloor {
		t.Errorf("parseAdaptive(250ms) = %+v, want target 250ms, floor %d", a, adaptiveFloor)
	}
	for _, v := range []string{"on", "0s", "-1s", "200"} {
		if _, err := parseAdaptive(v); err == nil {
			t.Errorf("parseAdaptive(%q) = nil error, want one", v)
		}
	}
}
