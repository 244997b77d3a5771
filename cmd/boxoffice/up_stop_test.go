package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestUpPutsTheRunBackWhenStopped stops `boxoffice up` (Ctrl-C) while a playground run has a
// limit of 1 request a second on the public events route, then starts it again on the same
// data directory: the gateway must have no stored edit left and the route its own limits.
// The playground stops first and puts its changes back while the gateway still serves; were
// they left, the gateway would apply them at its next start, and the next run would take
// them for the system's own state.
func TestUpPutsTheRunBackWhenStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole system twice")
	}
	dir, off := t.TempDir(), freeOffset(t)
	u := startUpIn(t, dir, off)
	running := true
	t.Cleanup(func() {
		if running {
			u.stop(t)
		}
	})
	var before struct {
		Limits []string `json:"limits"`
	}
	adminGet(t, u.ep.Admin, "/admin/routes/events", &before)
	if len(before.Limits) == 0 {
		t.Fatalf("GET /admin/routes/events lists no limit, want the policy's")
	}

	status, body := testkit.PostJSON(t, u.ep.Playground+"/api/runs", map[string]string{"scenario": "rate-limiter", "profile": "steady", "duration": "60s"})
	if status != http.StatusAccepted {
		t.Fatalf("POST /api/runs = %d %s, want 202", status, body)
	}
	var run struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(body, &run); err != nil {
		t.Fatal(err)
	}
	runURL := u.ep.Playground + "/api/runs/" + run.ID
	testkit.Eventually(t, 60*time.Second, "run "+run.ID+" is running", func() bool {
		resp, err := http.Get(runURL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&run) == nil && run.State == "running"
	})
	for _, knob := range [][2]string{{"limit", "true"}, {"rate", "1"}, {"burst", "1"}} {
		if status, body := testkit.PostJSON(t, runURL+"/knobs", map[string]string{"name": knob[0], "value": knob[1]}); status != http.StatusOK {
			t.Fatalf("POST knobs %s=%s = %d %s, want 200", knob[0], knob[1], status, body)
		}
	}
	var edits struct {
		Edits []json.RawMessage `json:"edits"`
	}
	if adminGet(t, u.ep.Admin, "/admin/edits", &edits); len(edits.Edits) == 0 {
		t.Fatal("GET /admin/edits during the run lists no edit, want the run's limit")
	}

	u.stop(t)
	running = false
	u = startUpIn(t, dir, off)
	running = true

	// The first run's logs are kept beside the second's.
	for _, name := range []string{"gateway", "playground", "order-2"} {
		b, err := os.ReadFile(filepath.Join(dir, "logs", name+".log.1"))
		if err != nil {
			t.Errorf("after the restart: %v, want the first run's log kept", err)
		} else if !strings.Contains(string(b), `"msg":"stopped"`) {
			t.Errorf("logs/%s.log.1 after the restart has no \"stopped\" line, want the first run's whole log:\n%s", name, b)
		}
	}

	if adminGet(t, u.ep.Admin, "/admin/edits", &edits); len(edits.Edits) != 0 {
		t.Errorf("GET /admin/edits after the restart = %s, want none: the run's edits outlived it", edits.Edits)
	}
	var after struct {
		Limits []string `json:"limits"`
	}
	if adminGet(t, u.ep.Admin, "/admin/routes/events", &after); !slices.Equal(after.Limits, before.Limits) {
		t.Errorf("route events limits after the restart = %v, want %v as before the run", after.Limits, before.Limits)
	}
}

// adminGet calls the gateway's admin API and decodes its answer into out.
func adminGet(t *testing.T, admin Admin, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, admin.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+admin.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s, want 200", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode GET %s: %v\n%s", path, err, b)
	}
}
