package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateLab = flag.Bool("update-lab", false, "rewrite the golden files in testdata/lab")

// TestLabGolden runs `boxoffice lab` on a trace and compares its output with golden files;
// go test -run TestLab -update-lab rewrites them after a deliberate change.
func TestLabGolden(t *testing.T) {
	trace := filepath.Join("testdata", "lab", "boundary.trace")
	sample := func(name string) string {
		return filepath.Join("..", "..", "playground", "web", "traces", name+".trace")
	}
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"table of every algorithm", []string{"--trace", trace, "--limit", "5", "--window", "1s"}, "all.table.golden"},
		{"json of the buckets with a burst", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--burst", "3",
			"--algorithms", "token_bucket,gcra", "--json"}, "buckets.json.golden"},
		{"sliding_window names the sliding counter", []string{"--trace", trace, "--limit", "4", "--window", "500ms",
			"--algorithms", "fixed_window, sliding_window"}, "sliding.table.golden"},
		{"every request of the boundary trace", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--show", "requests"}, "all.requests.golden"},

		// The worked examples of docs/lessons/algorithms.md, on the sample traces the lab page
		// offers: these numbers are the lesson's.
		{"window edge: 20, 10, 11, 10", []string{"--trace", sample("window-edge"), "--limit", "10", "--window", "1s"}, "window-edge.table.golden"},
		{"window edge request by request", []string{"--trace", sample("window-edge"), "--limit", "10", "--window", "1s",
			"--algorithms", "fixed_window,sliding_log,sliding_counter,token_bucket", "--show", "requests"}, "window-edge.requests.golden"},
		{"refresh burst: 29 then 10 a second", []string{"--trace", sample("refresh-burst"), "--limit", "10", "--window", "1s", "--burst", "20",
			"--algorithms", "token_bucket,gcra", "--show", "requests"}, "refresh-burst.requests.golden"},
		{"sustained: everything for 4.8 s, then 10 a second", []string{"--trace", sample("sustained"), "--limit", "10", "--window", "1s", "--burst", "20",
			"--algorithms", "token_bucket,gcra", "--show", "requests"}, "sustained.requests.golden"},
		{"two tenants: busy borrows idle's share, then gives it back", []string{"--trace", sample("two-tenants"), "--limit", "5", "--window", "1s",
			"--parent", "10", "--ceiling", "10", "--reserve", "2", "--algorithms", "token_bucket", "--show", "requests"}, "two-tenants.requests.golden"},
		{"two tenants without a ceiling: nothing borrowed", []string{"--trace", sample("two-tenants"), "--limit", "5", "--window", "1s",
			"--parent", "10", "--reserve", "2"}, "two-tenants-rigid.table.golden"},
		{"sliding estimate: 30 + 80 × 45/60 = 90", []string{"--trace", sample("sliding-estimate"), "--limit", "100", "--window", "1m",
			"--algorithms", "sliding_counter,sliding_log", "--show", "requests"}, "sliding-estimate.requests.golden"},
		{"forty at once: 20 at once, or 1 at once and 19 waiting", []string{"--trace", sample("forty-at-once"), "--limit", "10", "--window", "1s", "--burst", "20",
			"--max-delay", "2s", "--algorithms", "gcra", "--show", "requests"}, "forty-at-once.requests.golden"},
		// docs/lessons/distributed.md, "Counting locally, syncing often": the limit + 2 × 10.
		{"flood on 3 replicas syncing every 100ms: 120 where exact counting allows 100", []string{"--trace", sample("flood"), "--limit", "100", "--window", "1s",
			"--sync", "100ms", "--algorithms", "fixed_window,sliding_window"}, "flood-approx.table.golden"},
		{"refresh burst on 3 replicas syncing every 100ms: 25 where exact counting allows 20", []string{"--trace", sample("refresh-burst"), "--limit", "10", "--window", "1s",
			"--sync", "100ms", "--algorithms", "fixed_window,sliding_window,gcra"}, "refresh-burst-approx.table.golden"},
		{"two clients on 2 replicas, request by request", []string{"--trace", sample("two-clients"), "--limit", "10", "--window", "1s",
			"--sync", "250ms", "--replicas", "2", "--algorithms", "fixed_window", "--show", "requests"}, "two-clients-approx.requests.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := runLab(context.Background(), tt.args, &stdout, &stderr); err != nil {
				t.Fatalf("runLab(%q) = %v, stderr:\n%s", tt.args, err, stderr.String())
			}
			golden := filepath.Join("testdata", "lab", tt.golden)
			if *updateLab {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got := stdout.String(); got != string(want) {
				t.Errorf("runLab(%q) printed\n%s\nwant (%s)\n%s", tt.args, got, golden, want)
			}
		})
	}
}

func TestLabErrors(t *testing.T) {
	trace := filepath.Join("testdata", "lab", "boundary.trace")
	bad := filepath.Join(t.TempDir(), "bad.trace")
	if err := os.WriteFile(bad, []byte("0.5,alice\n0.25,bob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no trace", []string{"--limit", "5", "--window", "1s"}, "--trace, --limit and --window are required"},
		{"missing file", []string{"--trace", "nope.trace", "--limit", "5", "--window", "1s"}, "no such file"},
		{"unknown algorithm", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--algorithms", "leaky"}, `unknown algorithm "leaky"`},
		{"time going back", []string{"--trace", bad, "--limit", "5", "--window", "1s"}, "trace line 2"},
		{"ceiling without parent", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--ceiling", "10"}, "need --parent"},
		{"sync under 10ms", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--sync", "5ms"}, "--sync 5ms: want from 10ms to less than the window (1s)"},
		{"sync of the window", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--sync", "1s"}, "--sync 1s: want from 10ms to less than the window (1s)"},
		{"no replica", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--sync", "100ms", "--replicas", "0"}, "--replicas 0: want 1 to 100"},
		{"replicas without sync", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--replicas", "2"}, "--replicas needs --sync"},
		{"sync under a parent", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--sync", "100ms", "--parent", "10"}, "approximate lines and a parent do not combine"},
		{"unknown table", []string{"--trace", trace, "--limit", "5", "--window", "1s", "--show", "decisions"}, `--show "decisions": want totals or requests`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runLab(context.Background(), tt.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("runLab(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}
