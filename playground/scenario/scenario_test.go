package scenario

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"boxoffice.dev/scenarios"
)

func TestLoadDirReadsTheScenarios(t *testing.T) {
	list, err := LoadDir(scenarios.FS)
	if err != nil {
		t.Fatalf("LoadDir(scenarios.FS) = %v", err)
	}
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
		if s.Title == "" || s.Explainer == "" || s.DocsPath == "" {
			t.Errorf("%s: title, explainer and docs are what the playground shows; want all three", s.Name)
		}
		for _, p := range s.Profiles {
			if len(p.Expect) == 0 {
				t.Errorf("%s/%s has no expectation: a headless run of it checks nothing", s.Name, p.Name)
			}
		}
	}
	if got, want := strings.Join(names, ","), "flash-sale,multi-region,rate-limiter,retry-storm,store-outage"; got != want {
		t.Errorf("scenarios = %s, want %s", got, want)
	}
}

// minimal is a valid scenario document; the cases below break one thing each.
const minimal = `
name: s
title: T
explainer: E
docs: docs/x.md
driver: request
request: {method: GET, path: /v1/events, route: events}
streams: [{name: a, identity: ip, count: 2}]
knobs:
  - {name: retry, kind: enum, options: [none, naive], default: none}
  - {name: retries, kind: int, max: "10", default: "3"}
profiles:
  - name: p
    phases:
      - {name: one, duration: 2s, rate: 10}
      - {name: two, duration: 2s, rate: 10, knobs: {retry: naive}}
    expect:
      - {name: e, left: {metric: p99, phase: two}, op: "<=", right: {metric: p99, phase: one}, factor: 2}
`

func TestParseRejectsWhatARunCannotDo(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"valid", "", "", ""},
		{"unknown field", "title: T", "title: T\ncolour: red", "field colour not found"},
		{"unknown driver", "driver: request", "driver: carrier-pigeon", "driver"},
		{"knob outside the vocabulary", "name: retry, kind", "name: warp, kind", "knobs[warp]"},
		{"phase knob not offered", "knobs: {retry: naive}", "knobs: {capacity: \"3\"}", `"capacity" is not a knob`},
		{"knob value outside its options", "knobs: {retry: naive}", "knobs: {retry: frantic}", "want one of none, naive"},
		{"unknown metric", "metric: p99, phase: two", "metric: p99.9, phase: two", `metric "p99.9"`},
		{"unknown phase", "phase: one}", "phase: three}", `phase "three"`},
		{"bad operator", `op: "<="`, `op: "≈"`, "op"},
		{"settle longer than the phase", "rate: 10}\n      - {name: two", "rate: 10, settle: 3s}\n      - {name: two", "settle shorter"},
		{"bad gateway retry budget", "name: retry, kind", "name: gateway_retry_budget, kind: enum, options: [\"off\", \"20\"], default: \"off\"}\n  - {name: retry, kind", "knobs[gateway_retry_budget]"},
		{"bad gateway adaptive", "name: retry, kind", "name: gateway_adaptive, kind: enum, options: [\"off\", fast], default: \"off\"}\n  - {name: retry, kind", "knobs[gateway_adaptive]"},
		{"bad identity", "identity: ip", "identity: fingerprint", "identity"},
		{"phase knob out of range", "knobs: {retry: naive}", "knobs: {retries: \"-1\"}", `knobs.retries: "-1": want a value from 0 to 10`},
		{"default out of range", "default: \"3\"}", "default: \"11\"}", `knobs[retries].default: "11"`},
		{"bounds on an enum", "default: none}", "default: none, max: \"3\"}", "knobs[retry]: min and max"},
		{"max above the kind's ceiling", "max: \"10\"", "max: \"1000000\"", "knobs[retries]: min"},
		{"phase rate above the engine's", "duration: 2s, rate: 10}", "duration: 2s, rate: 20000}", "rates must be from 0 to 10000/s"},
		{"phase rate not a number", "duration: 2s, rate: 10}", "duration: 2s, rate: .nan}", "rates must be from 0 to 10000/s"},
		{"rate knob of another kind", "identity: ip, count: 2}", "identity: ip, count: 2, rate_knob: retry}", `rate_knob: "retry": want an int or float knob of at most 10000/s`},
		{"a login stream", "identity: ip, count: 2}", `identity: account, count: 2, request: {method: POST, path: /v1/auth/login, route: login, body: '{"email":"{email}","password":"{password}"}'}}`, ""},
		{"a stream's request without a path", "identity: ip, count: 2}", "identity: ip, count: 2, request: {method: POST}}", "streams[0].request: a stream's own request needs"},
		{"a login body without accounts", "identity: ip, count: 2}", `identity: ip, count: 2, request: {method: POST, path: /l, body: '{"email":"{email}"}'}}`, `needs identity account or user, not "ip"`},
		{"the store knob", "name: retry, kind", "name: store, kind: enum, options: [up, stalled, killed], default: up}\n  - {name: retry, kind", ""},
		{"a store state the runner cannot put", "name: retry, kind", "name: store, kind: enum, options: [up, melted], default: up}\n  - {name: retry, kind", `knobs[store].options: "melted"`},
		{"the store knob without up", "name: retry, kind", "name: store, kind: enum, options: [stalled], default: stalled}\n  - {name: retry, kind", "knobs[store]: want an enum with up"},
		{"the gateway's decisions", "metric: p99, phase: two", `metric: "decisions_ratio:store", phase: two`, ""},
		{"the gateway's decisions of one stream", "metric: p99, phase: two", `metric: "without_store_ratio", phase: two, stream: a`, "counts the gateway's decisions"},
		{"a decisions metric without a path", "metric: p99, phase: two", `metric: "decisions:", phase: two`, `metric "decisions:" is unknown`},
		{"a knob that needs another", `max: "10", default: "3"}`, `max: "10", default: "3", needs: {knob: retry, values: [naive]}}`, ""},
		{"a knob that needs an unknown knob", `max: "10", default: "3"}`, `max: "10", default: "3", needs: {knob: warp, values: [on]}}`, `knobs[retries].needs.knob: "warp"`},
		{"a knob that needs a value its knob cannot take", `max: "10", default: "3"}`, `max: "10", default: "3", needs: {knob: retry, values: [frantic]}}`, "knobs[retries].needs.values"},
		{"expected refusals", "driver: request", "driver: request\nclient: {expected: [{status: 409, meaning: seat taken}]}", ""},
		{"429 as an expected refusal", "driver: request", "driver: request\nclient: {expected: [{status: 429, meaning: limited}]}", "client.expected[0]"},
		{"rate knob above the engine's", "count: 2}]\nknobs:\n", "count: 2, rate_knob: fast}]\nknobs:\n  - {name: fast, kind: int, default: \"0\"}\n", `rate_knob: "fast": want an int or float knob of at most 10000/s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parseWants(t, strings.Replace(minimal, tt.old, tt.new, 1), tt.want)
		})
	}
}

// parseWants checks that Parse(doc) fails with an error containing want, or succeeds when want
// is "".
func parseWants(t *testing.T, doc, want string) {
	t.Helper()
	_, err := Parse([]byte(doc))
	switch {
	case want == "" && err != nil:
		t.Fatalf("Parse = %v, want nil", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("Parse = %v, want an error containing %q", err, want)
	}
}

func TestLoadDirWantsTheFileNameAsName(t *testing.T) {
	fsys := fstest.MapFS{"other.yaml": {Data: []byte(minimal)}}
	if _, err := LoadDir(fsys); err == nil || !strings.Contains(err.Error(), `base name "other"`) {
		t.Errorf("LoadDir(other.yaml naming itself s) = %v, want a name mismatch", err)
	}
}

func TestCheckComparesPhases(t *testing.T) {
	phases := map[string]*Stats{
		"off": {Tally: Tally{P99: 900, Sent: 100, Requests: 100, OK: 100}},
		"on": {Tally: Tally{P99: 100, Sent: 400, Requests: 100, OK: 40, TooMany: 60}, Counters: map[string]float64{"429:x": 60},
			Decisions: map[string]float64{"store": 20, "fallback": 50, "fail_closed": 10},
			Streams:   map[string]*Stats{"noisy": {Tally: Tally{OK: 5, TooMany: 45}}}},
	}
	totals := &Stats{Counters: map[string]float64{"oversold": 0}}
	tests := []struct {
		name   string
		e      Expectation
		passed bool
		want   string
	}{
		{"factor of another phase", Expectation{Left: Measure{Metric: "p99", Phase: "on"}, Op: "<=", Right: &Measure{Metric: "p99", Phase: "off"}, Factor: 0.25},
			true, "p99(on) <= 0.25 × p99(off) = 0.25 × 900 = 225"},
		{"factor missed", Expectation{Left: Measure{Metric: "p99", Phase: "on"}, Op: "<=", Right: &Measure{Metric: "p99", Phase: "off"}, Factor: 0.1},
			false, "p99(on) <= 0.1 × p99(off) = 0.1 × 900 = 90"},
		{"a constant", Expectation{Left: Measure{Metric: "amplification", Phase: "on"}, Op: ">=", Value: 3.5}, true, "amplification(on) >= 3.50"},
		{"a ratio", Expectation{Left: Measure{Metric: "too_many_ratio", Phase: "on"}, Op: ">", Value: 0.5}, true, "too_many_ratio(on) > 0.5"},
		{"a stream", Expectation{Left: Measure{Metric: "too_many_ratio", Phase: "on", Stream: "noisy"}, Op: ">=", Value: 0.9}, true, "too_many_ratio(noisy@on) >= 0.9"},
		{"a counter of a phase", Expectation{Left: Measure{Metric: "counter:429:x", Phase: "on"}, Op: "==", Value: 60}, true, "429:x(on) == 60"},
		{"a counter of the run", Expectation{Left: Measure{Metric: "counter:oversold"}, Op: "==", Value: 0}, true, "oversold(run) == 0"},
		{"decisions by a path", Expectation{Left: Measure{Metric: "decisions:fallback", Phase: "on"}, Op: ">", Value: 0}, true, "decisions:fallback(on) > 0"},
		{"a path's share", Expectation{Left: Measure{Metric: "decisions_ratio:store", Phase: "on"}, Op: "<=", Value: 0.5}, true, "decisions_ratio:store(on) <= 0.5"},
		{"the share without the store", Expectation{Left: Measure{Metric: "without_store_ratio", Phase: "on"}, Op: ">=", Value: 0.5}, true, "without_store_ratio(on) >= 0.5"},
		{"no decisions: a share of 0", Expectation{Left: Measure{Metric: "without_store_ratio", Phase: "off"}, Op: "==", Value: 0}, true, "without_store_ratio(off) == 0"},
		{"a stream without traffic fails", Expectation{Left: Measure{Metric: "p99", Phase: "off", Stream: "noisy"}, Op: ">=", Value: 0}, false, ">="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.e.Name = tt.name
			got := check([]Expectation{tt.e}, phases, totals)[0]
			if got.Passed != tt.passed || got.Want != tt.want {
				t.Errorf("check(%s) = %+v, want passed %v and want %q", tt.name, got, tt.passed, tt.want)
			}
		})
	}
}

func TestScaleKeepsEachPhaseShare(t *testing.T) {
	p := Profile{Phases: []Phase{
		{Name: "a", Duration: Duration(10 * time.Second), Settle: Duration(2 * time.Second)},
		{Name: "b", Duration: Duration(30 * time.Second)},
	}}
	got := scale(p, 20*time.Second)
	if a, b := got.Phases[0].Duration.D(), got.Phases[1].Duration.D(); a != 5*time.Second || b != 15*time.Second {
		t.Errorf("scale(10s+30s, 20s) = %v + %v, want 5s + 15s", a, b)
	}
	if s := got.Phases[0].Settle.D(); s != time.Second {
		t.Errorf("scaled settle = %v, want 1s", s)
	}
	if p.Phases[0].Duration.D() != 10*time.Second {
		t.Error("scale changed the profile it was given")
	}
	if tiny := scale(p, time.Second); tiny.Phases[0].Duration.D() != time.Second || tiny.Phases[0].Settle.D() != 0 {
		t.Errorf("scale to 1s = %+v, want phases of at least 1s with settle shorter", tiny.Phases[0])
	}
}

func TestParseLoadSumsTheServicesSeries(t *testing.T) {
	text := `# HELP boxoffice_control_in_flight Requests holding a service slot.
# TYPE boxoffice_control_in_flight gauge
boxoffice_control_in_flight{otel_scope_name="boxoffice.dev/platform/control",service="catalog"} 3
boxoffice_control_in_flight{otel_scope_name="boxoffice.dev/platform/control",service="inventory"} 7
boxoffice_control_queued{service="catalog"} 12
boxoffice_control_max_concurrent{service="catalog"} 4
boxoffice_control_in_flight_total 99
`
	got, err := parseLoad(strings.NewReader(text), "catalog")
	if err != nil {
		t.Fatal(err)
	}
	if want := (backendLoad{inFlight: 3, queued: 12, capacity: 4}); got != want {
		t.Errorf("parseLoad(catalog) = %+v, want %+v", got, want)
	}
}

// TestParseChecksTheMultiRegionDriver breaks the committed multi-region scenario one field
// at a time.
func TestParseChecksTheMultiRegionDriver(t *testing.T) {
	doc, err := scenarios.FS.ReadFile("multi-region.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, old, new, want string }{
		{"valid", "", "", ""},
		{"shares not adding up", "shares: {eu: 70, us: 30}", "shares: {eu: 70, us: 20}", "multi_region.shares"},
		{"three regions", "shares: {eu: 70, us: 30}", "shares: {eu: 70, us: 20, ap: 10}", "want two regions"},
		{"home not a region", "home: eu", "home: ap", "multi_region.home"},
		{"a stream that is not a mode", "{name: static, identity: ip}", "{name: nearest, identity: ip}", `streams[1].name: "nearest"`},
		{"too many replicas", "replicas: 2", "replicas: 9", "multi_region.limit"},
		{"sync as long as the window", "sync: 100ms", "sync: 1s", "multi_region.rebalance"},
		{"no link knob", "  - {name: rtt,", "  - {name: no_such_rtt,", "knobs: the multi-region driver needs a rtt knob"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parseWants(t, strings.Replace(string(doc), tt.old, tt.new, 1), tt.want)
		})
	}
	parseWants(t, strings.Replace(minimal, "driver: request", "driver: multi-region", 1), "multi_region: required")
}
