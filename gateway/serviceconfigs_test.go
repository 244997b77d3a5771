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
    retry_budget: {ratio: 0.1, min_per_second: 1, window: 5s}
routes:
  - {id: events, match: {method: GET, path: /v1/events}, service: catalog, auth: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := serviceConfigs(&policy.Snapshot{Policy: p}, map[string][]string{"catalog": {"http://127.0.0.1:2"}})
	if len(got) != 1 {
		t.Fatalf("serviceConfigs = %d services, want 1", len(got))
	}
	c := got[0]
	if c.MaxInFlight != 7 || c.Instances[0] != "http://127.0.0.1:2" {
		t.Errorf("serviceConfigs()[0] = max_in_flight %d instances %v, want 7 and the override", c.MaxInFlight, c.Instances)
	}
	if b := c.RetryBudget; b.Ratio != 0.1 || b.MinPerSecond != 1 || b.Window != 5*time.Second {
		t.Errorf("serviceConfigs()[0].RetryBudget = %+v, want ratio 0.1, 1/s, 5s", b)
	}
}
