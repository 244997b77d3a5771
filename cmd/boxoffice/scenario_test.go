package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/playground/scenario"
)

func TestScenarioListNamesEveryScenario(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"boxoffice", "scenario", "list"}, func(string) string { return "" }, &out, &errs); err != nil {
		t.Fatalf("scenario list = %v\n%s", err, errs.String())
	}
	for _, name := range []string{"rate-limiter", "retry-storm", "flash-sale", "store-outage", "multi-region"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("scenario list output lacks %s:\n%s", name, out.String())
		}
	}
}

// TestScenarioRunMeetsEveryExpectation is the playground's acceptance test: each scenario's
// profile runs headless against the whole system, and every expectation — each a comparison
// between phases or knob settings — must hold. The runs share one system; each puts back
// every knob it turned.
func TestScenarioRunMeetsEveryExpectation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every scenario for about four minutes")
	}
	ep := startUp(t)
	dir := t.TempDir()
	endpoints := filepath.Join(dir, "endpoints.json")
	if err := writeJSON(endpoints, ep); err != nil {
		t.Fatal(err)
	}
	runs := []struct{ scenario, profile string }{
		{"rate-limiter", "spike"},
		{"rate-limiter", "noisy-neighbour"},
		{"rate-limiter", "shedding"},
		{"rate-limiter", "rollout"},
		{"rate-limiter", "client-pacing"},
		{"rate-limiter", "shaping"},
		{"retry-storm", "outage"},
		{"flash-sale", "on-sale"},
		{"multi-region", "follow-the-sun"},
		// Last: it kills the store the others use (and restarts it).
		{"store-outage", "stall-then-kill"},
	}
	for _, r := range runs {
		t.Run(r.scenario+"/"+r.profile, func(t *testing.T) {
			report := filepath.Join(dir, r.scenario+"-"+r.profile+".html")
			var out, errs bytes.Buffer
			err := run(context.Background(), []string{"boxoffice", "scenario", "run", r.scenario, "--profile", r.profile,
				"--target", endpoints, "--json", "--report", report}, func(string) string { return "" }, &out, &errs)
			var res scenario.Result
			if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
				t.Fatalf("scenario run %s = %v; its --json output does not parse: %v\n%s", r.scenario, err, jerr, errs.String())
			}
			for _, o := range res.Expectations {
				if !o.Passed {
					t.Errorf("%s: want %s; got %s", o.Name, o.Want, o.Got)
				} else {
					t.Logf("met: %s (%s)", o.Name, o.Got)
				}
			}
			if err != nil {
				t.Fatalf("scenario run %s --profile %s = %v", r.scenario, r.profile, err)
			}
			if len(res.Expectations) == 0 {
				t.Error("no expectation was checked")
			}
			if len(res.Series) < 10 {
				t.Errorf("series has %d seconds, want one sample per second of the run", len(res.Series))
			}
			html, err := os.ReadFile(report)
			if err != nil {
				t.Fatalf("report: %v", err)
			}
			for _, want := range []string{"<svg", "every expectation met", res.Expectations[0].Name} {
				if !bytes.Contains(html, []byte(want)) {
					t.Errorf("report %s lacks %q", report, want)
				}
			}
			if bytes.Contains(html, []byte("http://")) || bytes.Contains(html, []byte("https://")) {
				t.Errorf("report %s refers to a URL; it must open offline", report)
			}
			// Everything put back: nothing is left for the next run to put back.
			if _, err := os.Stat(filepath.Join(dir, scenarioJournalFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("put-back journal after the run: %v, want none", err)
			}
		})
	}
}

// TestScenarioRunStartsTheSystemItself runs a scenario without --target: the command starts
// the whole system on free ports, prints the live line and the summary, and stops it again.
func TestScenarioRunStartsTheSystemItself(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole system and runs a scenario")
	}
	var out, errs bytes.Buffer
	start := time.Now()
	err := run(context.Background(), []string{"boxoffice", "scenario", "run", "rate-limiter", "--profile", "steady"},
		func(string) string { return "" }, &out, &errs)
	if err != nil {
		t.Fatalf("scenario run rate-limiter --profile steady = %v\n%s\n%s", err, out.String(), errs.String())
	}
	t.Logf("ran in %v", time.Since(start))
	for _, want := range []string{"steady-unlimited", "steady-limited", "PASS", "p99 ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errs.String(), "starting the system") || !strings.Contains(errs.String(), "sent") {
		t.Errorf("stderr lacks the start-up note or the progress line:\n%s", errs.String())
	}
	if strings.Contains(out.String(), "FAIL") {
		t.Errorf("an expectation failed:\n%s", out.String())
	}
}

// TestScenarioRunBoundsTheDuration: a --duration beyond the playground's cap is refused
// before anything starts; one at the cap is taken (the run then fails on the unreachable
// target, not on the flag).
func TestScenarioRunBoundsTheDuration(t *testing.T) {
	tests := []struct {
		duration string
		want     string
	}{
		{"100000h", "--duration 100000h0m0s: want at most 10m0s"},
		{"10m1s", "--duration 10m1s: want at most 10m0s"},
		{"-1s", "--duration -1s: want at most 10m0s"},
		{"10m", "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.duration, func(t *testing.T) {
			var out, errs bytes.Buffer
			err := run(context.Background(), []string{"boxoffice", "scenario", "run", "rate-limiter", "--duration", tt.duration, "--target", "http://127.0.0.1:1"},
				func(string) string { return "" }, &out, &errs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("scenario run --duration %s = %v, want an error containing %q", tt.duration, err, tt.want)
			}
		})
	}
}
