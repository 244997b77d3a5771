package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"boxoffice.dev/gateway/ratelimit/lab"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/playground"
)

// TestPlaygroundLabMatchesLabCommand holds the algorithm lab page to `boxoffice lab`: for the
// same trace file and flags, POST /api/lab on a running playground and `boxoffice lab --json`
// give the same decisions, request by request.
func TestPlaygroundLabMatchesLabCommand(t *testing.T) {
	p := testkit.RunProcess(t, playground.Run, nil)
	samples, err := filepath.Glob(filepath.Join("..", "..", "playground", "web", "traces", "*.trace"))
	if err != nil {
		t.Fatal(err)
	}
	traces := append([]string{filepath.Join("testdata", "lab", "boundary.trace")}, samples...)
	tests := []struct {
		name  string
		args  []string
		query map[string]any
	}{
		{"every algorithm", []string{"--limit", "5", "--window", "1s"}, map[string]any{"limit": 5, "window": "1s"}},
		{"buckets with a burst", []string{"--limit", "5", "--window", "1s", "--burst", "10", "--algorithms", "token_bucket,gcra"},
			map[string]any{"limit": 5, "window": "1s", "burst": 10, "algorithms": []string{"token_bucket", "gcra"}}},
		{"sliding window by its other name", []string{"--limit", "3", "--window", "500ms", "--algorithms", "fixed_window,sliding_window"},
			map[string]any{"limit": 3, "window": "500ms", "algorithms": []string{"fixed_window", "sliding_window"}}},
		{"gcra and its queue", []string{"--limit", "5", "--window", "1s", "--burst", "8", "--max-delay", "1500ms", "--algorithms", "gcra"},
			map[string]any{"limit": 5, "window": "1s", "burst": 8, "max_delay": "1500ms", "algorithms": []string{"gcra"}}},
		{"window algorithms counted approximately", []string{"--limit", "5", "--window", "1s", "--sync", "250ms", "--replicas", "2", "--algorithms", "fixed_window,sliding_window"},
			map[string]any{"limit": 5, "window": "1s", "sync": "250ms", "replicas": 2, "algorithms": []string{"fixed_window", "sliding_window"}}},
	}
	for _, trace := range traces {
		text, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			t.Run(filepath.Base(trace)+"/"+tt.name, func(t *testing.T) {
				args := append([]string{"--trace", trace, "--json"}, tt.args...)
				var stdout, stderr bytes.Buffer
				if err := runLab(context.Background(), args, &stdout, &stderr); err != nil {
					t.Fatalf("runLab(%q) = %v, stderr:\n%s", args, err, stderr.String())
				}
				var cli struct {
					Results []lab.Result `json:"results"`
				}
				if err := json.Unmarshal(stdout.Bytes(), &cli); err != nil {
					t.Fatalf("decode boxoffice lab --json: %v", err)
				}

				query := map[string]any{"trace": string(text)}
				for k, v := range tt.query {
					query[k] = v
				}
				body, _ := json.Marshal(query)
				resp, err := http.Post(p.HTTPURL+"/api/lab", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var page struct {
					Results []lab.Result `json:"results"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("POST /api/lab = %d, %v; want 200 and JSON", resp.StatusCode, err)
				}
				if len(cli.Results) == 0 {
					t.Fatalf("boxoffice lab %q printed no results", args)
				}
				if !reflect.DeepEqual(page.Results, cli.Results) {
					t.Errorf("POST /api/lab %v = %+v\nwant boxoffice lab %q = %+v", tt.query, page.Results, args, cli.Results)
				}
			})
		}
	}
}
