// Package shim runs a k6 script of scenarios/k6 in Node, through a shim of the k6 modules the
// scripts use (k6, k6/http, k6/metrics, k6/execution; see run.mjs), and reports what the run
// did. The requests are real: a test points the script at a running system and learns whether
// each path, header and status the script expects is the system's. Arrival rates, durations
// and thresholds are k6's alone; the shim runs each scenario's function a few times, one
// after the other.
package shim

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
)

//go:embed run.mjs hooks.mjs k6
var files embed.FS

// Report is what one run did.
type Report struct {
	Requests []Request        `json:"requests"`
	Checks   map[string]Check `json:"checks"`
	// Metrics are the script's custom metrics, by "name{scenario:…}".
	Metrics map[string]Metric `json:"metrics"`
}

// Request is one request the script made and its answer. Scenario is the one running
// (setup and teardown included); Expected is what the script's responseCallback says of the
// status (by default, 200 to 399); Status 0 is a request that failed or timed out.
type Request struct {
	Scenario string `json:"scenario"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	Status   int    `json:"status"`
	Expected bool   `json:"expected"`
	Error    string `json:"error,omitempty"`
}

// Check counts one check's outcomes.
type Check struct {
	Passes int `json:"passes"`
	Fails  int `json:"fails"`
}

// Metric counts one custom metric's samples and sums their values.
type Metric struct {
	Count int     `json:"count"`
	Sum   float64 `json:"sum"`
}

// Run runs script (a path) with node: setup, each scenario's function iterations times,
// teardown. env is added to this process's environment, for the script's __ENV. A script that
// throws, or a run that outlives ctx, is an error carrying what Node wrote to stderr.
func Run(ctx context.Context, node, script string, iterations int, env []string) (Report, error) {
	dir, err := os.MkdirTemp("", "k6shim")
	if err != nil {
		return Report{}, fmt.Errorf("k6 shim: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.CopyFS(dir, files); err != nil {
		return Report{}, fmt.Errorf("k6 shim: %w", err)
	}
	abs, err := filepath.Abs(script)
	if err != nil {
		return Report{}, err
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "run.mjs"), abs)
	cmd.Env = append(append(os.Environ(), fmt.Sprintf("ITERATIONS=%d", iterations)), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Report{}, fmt.Errorf("node run.mjs %s: %w\n%s", filepath.Base(script), err, stderr.Bytes())
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return Report{}, fmt.Errorf("k6 shim report of %s: %w\n%s", filepath.Base(script), err, stdout.Bytes())
	}
	return r, nil
}

// Problems lists what says the script is wrong: each check that failed, and each request
// answered a status the script did not declare expected that no load explains: a 4xx but 409
// (a conflict) and 429 (a limit), or a 500 or 501. Timeouts, 502, 503 and 504 are what
// overload and outages produce, which the scenarios cause on purpose.
func (r Report) Problems() []string {
	var out []string
	for name, c := range r.Checks {
		if c.Fails > 0 {
			out = append(out, fmt.Sprintf("check %q failed %d of %d times", name, c.Fails, c.Fails+c.Passes))
		}
	}
	sort.Strings(out)
	for _, q := range r.Requests {
		wrong := (q.Status >= 400 && q.Status < 500 && !slices.Contains([]int{409, 429}, q.Status)) || q.Status == 500 || q.Status == 501
		if wrong && !q.Expected {
			out = append(out, fmt.Sprintf("%s: %s %s answered %d", q.Scenario, q.Method, q.URL, q.Status))
		}
	}
	return out
}
