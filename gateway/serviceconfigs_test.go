package gateway

import (
	"testing"
	"time"

	"boxoffice.dev/gateway/policy"
)

// Every knob a policy sets on a service must reach the upstream layer, or an admin edit of it
// would be accepted and then silently ignored.
func TestServiceConfigsCarryTheKnobs(t *testing.T) {
	p, err := policy.Parse([]byte(`
services:
  - name: catalog
    instances: ["http://127.0.0.1:1"]
    max_in_flight: 7
    adaptive_concurrency: {latency_target: 150ms, min_in_flight: 2}
    retry_budget: {ratio: 0.1, min_per_second: 1, window: 5s}
    panic_threshold: 0.3
  - {name: search, instances: ["http://127.0.0.1:3"], panic_threshold: 0}
  - {name: auth, instances: ["http://127.0.0.1:4"]}
routes:
  - {id: events, match: {method: GET, path: /v1/events}, service: catalog, auth: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := serviceConfigs(&policy.Snapshot{Policy: p}, map[string][]string{"catalog": {"http://127.0.0.1:2"}})
	if len(got) != 3 {
		t.Fatalf("serviceConfigs = %d services, want 3", len(got))
	}
	c := got[0]
	if c.MaxInFlight != 7 || c.Instances[0] != "http://127.0.0.1:2" {
		t.Errorf("serviceConfigs()[0] = max_in_flight %d instances %v, want 7 and the override", c.MaxInFlight, c.Instances)
	}
	if a := c.Adaptive; a.LatencyTarget != 150*time.Millisecond || a.MinInFlight != 2 {
		t.Errorf("serviceConfigs()[0].Adaptive = %+v, want 150ms, floor 2", a)
	}
	if a := got[1].Adaptive; a.LatencyTarget != 0 {
		t.Errorf("serviceConfigs()[1].Adaptive = %+v, want off", a)
	}
	if b := c.RetryBudget; b.Ratio != 0.1 || b.MinPerSecond != 1 || b.Window != 5*time.Second {
		t.Errorf("serviceConfigs()[0].RetryBudget = %+v, want ratio 0.1, 1/s, 5s", b)
	}
	// 0 turns panic mode off in the policy; the upstream layer's 0 is its default, negative off.
	for i, want := range []float64{0.3, -1, 0} {
		if th := got[i].PanicThreshold; th != want {
			t.Errorf("serviceConfigs()[%d].PanicThreshold = %g, want %g", i, th, want)
		}
	}
}
