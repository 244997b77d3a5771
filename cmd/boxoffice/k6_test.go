package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/scenarios/k6/shim"
)

// TestK6ScriptsAgainstUp runs each k6 script of scenarios/k6 against a real `boxoffice up`,
// in Node through the k6 shim: setup, three iterations of each scenario's function, teardown.
// The requests are real, so a wrong path, header, body or status expectation, or a flow that
// stops short, fails here; and after each script the gateway's edits and the catalog's knobs
// must be as they were. What the shim cannot tell (arrival rates, thresholds over real load)
// is k6's: see scenarios/k6/README.md.
func TestK6ScriptsAgainstUp(t *testing.T) {
	node := testkit.LookPath(t, "node")
	scripts, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "k6", "*.js"))
	if err != nil || len(scripts) != 4 {
		t.Fatalf("k6 scripts = %v (%v), want the four scenarios", scripts, err)
	}
	ep := startUp(t)
	env := []string{
		"BASE_URL=" + ep.Gateway, "ADMIN_URL=" + ep.Admin.URL, "ADMIN_TOKEN=" + ep.Admin.Token,
		"CONTROL_URLS=" + strings.Join(ep.Services["catalog"], ","),
		"FANS=5",
		// Pauses a quarter as long: the waiting room's polls, retry-storm's 14s outage.
		"K6_SLEEP_SCALE=0.25",
	}
	// The custom metric that shows each script's flow reached its end.
	reached := map[string]string{
		"flash-sale.js":   "orders{scenario:fans}",
		"rate-limiter.js": "accepted_duration{scenario:limited}",
		"retry-storm.js":  "succeeded{scenario:clients}",
		"store-outage.js": "", // its counters count failures only
	}
	for _, s := range scripts {
		name := filepath.Base(s)
		t.Run(name, func(t *testing.T) {
			edits, knobs := systemState(t, ep)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			r, err := shim.Run(ctx, node, s, 3, env)
			if err != nil {
				t.Fatal(err)
			}
			if p := r.Problems(); len(p) > 0 {
				t.Errorf("%s against boxoffice up:\n%s", name, strings.Join(p, "\n"))
			}
			served := map[string]bool{}
			for _, q := range r.Requests {
				served[q.Scenario] = served[q.Scenario] || q.Status/100 == 2
			}
			for sc, ok := range served {
				if !ok {
					t.Errorf("scenario %s: no request of it answered 2xx", sc)
				}
			}
			if !served["setup"] || !served["teardown"] {
				t.Errorf("setup or teardown made no successful request (served: %v)", served)
			}
			if m := reached[name]; m != "" && r.Metrics[m].Count == 0 {
				t.Errorf("metric %s has no sample: the flow stopped short (metrics: %v)", m, r.Metrics)
			}
			afterEdits, afterKnobs := systemState(t, ep)
			if !reflect.DeepEqual(afterEdits, edits) {
				t.Errorf("gateway edits after %s = %v, want them put back: %v", name, afterEdits, edits)
			}
			if !reflect.DeepEqual(afterKnobs, knobs) {
				t.Errorf("catalog knobs after %s = %v, want them put back: %v", name, afterKnobs, knobs)
			}
		})
	}
}

// systemState is what a script may change: the gateway's stored edits and each catalog
// instance's knobs.
func systemState(t *testing.T, ep Endpoints) (edits any, knobs []map[string]any) {
	t.Helper()
	adminGet(t, ep.Admin, "/admin/edits", &edits)
	for _, u := range ep.Services["catalog"] {
		resp, err := http.Get(u + "/control")
		if err != nil {
			t.Fatal(err)
		}
		var k map[string]any
		err = json.NewDecoder(resp.Body).Decode(&k)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/control = %d (%v), want 200 and the knobs", u, resp.StatusCode, err)
		}
		knobs = append(knobs, k)
	}
	return edits, knobs
}
