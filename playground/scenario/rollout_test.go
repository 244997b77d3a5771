package scenario

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

const rolloutScenario = catalogScenario + `name: rollout
title: Rollout
limit: {id: lim}
knobs:
  - {name: limit, kind: bool, default: "false"}
  - {name: limit_mode, kind: enum, options: [enforce, shadow], default: enforce}
  - {name: enforce_percent, kind: int, max: "100", default: "100"}
counters:
  - {name: "unenforced_denied:lim", label: U}
profiles:
  - name: p
    phases:
      - {name: shadow, duration: 1s, rate: 10, knobs: {limit: "true", limit_mode: shadow}}
      - {name: partial, duration: 2s, rate: 10, knobs: {limit_mode: enforce, enforce_percent: "30"}}
    expect:
      - {name: counted, left: {metric: "counter:unenforced_denied:lim", phase: partial}, op: ">", value: 0}
`

// TestRolloutKnobsEditTheLimit: the mode and enforce_percent knobs reach the scenario's limit
// through the admin API, and the gateway's would-deny count of the limit's unenforced keys
// (ratelimit_decisions_total outcome unenforced_denied) is a counter of the run's seconds.
func TestRolloutKnobsEditTheLimit(t *testing.T) {
	sys := newFakeSystem()
	var mu sync.Mutex
	var puts []string
	unenforced := 0 // one would-deny per request: the fake gateway counts every request so
	run := startOnFake(t, rolloutScenario, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/admin/limits/lim":
			body, _ := io.ReadAll(r.Body)
			puts = append(puts, string(body))
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		case r.URL.Path == "/v1/events":
			unenforced++
		}
		n := unenforced
		mu.Unlock()
		sys.ServeHTTP(w, r)
		if r.URL.Path == "/metrics" {
			_, _ = fmt.Fprintf(w, "ratelimit_decisions_total{outcome=\"unenforced_denied\",path=\"store\",rule=\"lim\"} %d\n", n)
		}
	}), Options{})
	<-run.Done()

	mu.Lock()
	defer mu.Unlock()
	var shadow, partial bool
	for _, p := range puts {
		shadow = shadow || strings.Contains(p, `"mode":"shadow"`)
		partial = partial || strings.Contains(p, `"mode":"enforce"`) && strings.Contains(p, `"enforce_percent":30`)
	}
	if !shadow || !partial {
		t.Errorf("PUT /admin/limits/lim bodies = %q, want one in shadow and one enforced at 30", puts)
	}
	res := run.Result()
	if !res.Passed() {
		t.Errorf("expectations = %+v, want the would-deny counted in the partial phase", res.Expectations)
	}
	var counted float64
	for _, smp := range res.Series {
		counted += smp.Counters["unenforced_denied:lim"]
	}
	if counted <= 0 || counted > float64(unenforced) {
		t.Errorf("unenforced_denied:lim over the run's seconds = %v, want above 0 and at most the %d counted", counted, unenforced)
	}
}
