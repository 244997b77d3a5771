package playground

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/playground/scenario"
)

// TestWritesFromOtherSitesAreRefused sends POST /api/runs as a page on another site could
// make a browser send it, and as the playground's own page and curl do: only the latter start
// a run. The target is unreachable, so an accepted run fails at once and frees the system.
func TestWritesFromOtherSitesAreRefused(t *testing.T) {
	srv, _ := playgroundServer(t, []scenario.Scenario{probeScenario(t)}, func() (scenario.Target, error) {
		return scenario.Target{}, errors.New("no system to drive")
	})
	const body = `{"scenario":"probe"}`
	tests := []struct {
		name    string
		path    string
		body    string
		headers map[string]string
		status  int
		want    string
	}{
		{"a text/plain form post, no preflight", "/api/runs", body, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, `"field":"Content-Type"`},
		{"a url-encoded form", "/api/runs", "scenario=probe", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, "application/json"},
		{"no content type", "/api/runs", body, nil, http.StatusUnsupportedMediaType, "application/json"},
		{"JSON from another origin", "/api/runs", body, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, http.StatusForbidden, "cross-origin request refused"},
		{"JSON from another port of this host", "/api/runs", body, map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:1"}, http.StatusForbidden, "cross-origin request refused"},
		{"a cross-site fetch without Origin", "/api/runs", body, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "cross-origin request refused"},
		{"stopping from another site, no body", "/api/runs/r1/stop", "", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, "cross-origin request refused"},
		{"the playground's own page", "/api/runs", body, map[string]string{"Content-Type": "application/json", "Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}, http.StatusAccepted, `"scenario":"probe"`},
		{"curl", "/api/runs", body, map[string]string{"Content-Type": "application/json; charset=utf-8"}, http.StatusAccepted, `"scenario":"probe"`},
		{"curl stopping a run, no body", "/api/runs/r1/stop", "", nil, http.StatusAccepted, `"id":"r1"`},
	}
	started := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
				t.Errorf("POST %s %v = %d %s, want %d containing %q", tt.path, tt.headers, resp.StatusCode, b, tt.status, tt.want)
			}
			if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("POST %s %v Content-Type = %q, want application/problem+json", tt.path, tt.headers, resp.Header.Get("Content-Type"))
			}
			if tt.status == http.StatusAccepted && tt.path == "/api/runs" {
				started++
				id := decode[runInfo](t, b).ID
				testkit.Eventually(t, 10*time.Second, "run "+id+" has failed and freed the system", func() bool {
					_, b := call(t, "GET", srv.URL+"/api/runs/"+id, nil)
					return decode[runInfo](t, b).State == stateFailed
				})
			}
			_, b = call(t, "GET", srv.URL+"/api/runs", nil)
			if runs := decode[struct{ Runs []runInfo }](t, b).Runs; len(runs) != started {
				t.Errorf("after POST %s %v the playground holds %d runs, want %d", tt.path, tt.headers, len(runs), started)
			}
		})
	}
}
