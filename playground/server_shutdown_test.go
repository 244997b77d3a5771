package playground

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/playground/scenario"
)

// TestStoppingThePlaygroundPutsTheRunBack stops the playground process in the middle of a run
// that took its backend down, and requires the backend to be back up by the time the process
// has returned: what a run changes must not outlive the playground (the gateway keeps its
// admin edits across restarts). The backend's control hook answers PUTs slowly, as an admin
// API under load might, so a put-back the shutdown does not wait for arrives too late.
func TestStoppingThePlaygroundPutsTheRunBack(t *testing.T) {
	echo := echoSystem(t)
	backend, err := url.Parse(echo.Services["echo"][0])
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			time.Sleep(500 * time.Millisecond) // the slowness under test, not a wait for a state
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	target := scenario.Target{Gateway: echo.Gateway, Services: map[string][]string{"echo": {slow.URL}}}

	run := probePlayground(t, func() (scenario.Target, error) { return target, nil }, nil)
	p := testkit.RunProcess(t, run, map[string]string{"SHUTDOWN_TIMEOUT": "5s", "DRAIN_DELAY": "0s"})

	status, body := call(t, "POST", p.HTTPURL+"/api/runs", map[string]string{"scenario": "probe"})
	if status != http.StatusAccepted {
		t.Fatalf("POST /api/runs = %d %s, want 202", status, body)
	}
	runURL := p.HTTPURL + "/api/runs/" + decode[runInfo](t, body).ID
	testkit.Eventually(t, 15*time.Second, "the run is running", func() bool {
		_, b := call(t, "GET", runURL, nil)
		return decode[runInfo](t, b).State == stateRunning
	})
	if status, body := call(t, "POST", runURL+"/knobs", map[string]string{"name": "outage", "value": "down"}); status != http.StatusOK {
		t.Fatalf("POST knobs outage=down = %d %s, want 200", status, body)
	}
	if k := knobsOf(t, backend.String()); !k.Outage {
		t.Fatalf("backend knobs after outage=down = %+v, want an outage", k)
	}

	if err := p.Stop(); err != nil {
		t.Fatalf("stop the playground = %v, want nil", err)
	}
	if k := knobsOf(t, backend.String()); k.Outage {
		t.Errorf("backend knobs once the playground has stopped = %+v, want the outage put back", k)
	}
}

// knobsOf reads a process's control knobs.
func knobsOf(t *testing.T, base string) control.Knobs {
	t.Helper()
	resp, err := http.Get(base + control.Path)
	if err != nil {
		t.Fatalf("GET %s%s: %v", base, control.Path, err)
	}
	defer resp.Body.Close()
	var k control.Knobs
	if err := json.NewDecoder(resp.Body).Decode(&k); err != nil {
		t.Fatalf("decode %s%s: %v", base, control.Path, err)
	}
	return k
}
