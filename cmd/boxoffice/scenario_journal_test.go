package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"boxoffice.dev/playground/scenario"
)

// TestScenarioRunPutsBackAKilledRunFirst checks the command's put-back journal: what a killed
// `scenario run --target` left is put back before the next run starts, and what cannot be
// put back stops it, kept for another try.
func TestScenarioRunPutsBackAKilledRunFirst(t *testing.T) {
	// A killed run had changed one limit, which had no stored edit before: putting it back is
	// deleting the run's edit.
	const leftover = `{"entries":[{"n":1,"kind":"edit","element":"limit","id":"holds-per-account"}]}`
	tests := []struct {
		name     string
		status   int // the admin API's answer to the put-back
		wantErr  bool
		wantKept bool
	}{
		{"put back", http.StatusNoContent, false, false},
		{"the gateway refuses", http.StatusInternalServerError, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []string
			admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				calls = append(calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
				mu.Unlock()
				w.WriteHeader(tt.status)
			}))
			defer admin.Close()
			dir := t.TempDir()
			endpoints := filepath.Join(dir, "endpoints.json")
			path := filepath.Join(dir, scenarioJournalFile)
			if err := os.WriteFile(path, []byte(leftover), 0o600); err != nil {
				t.Fatal(err)
			}
			target := scenario.Target{Gateway: "http://127.0.0.1:1", Admin: admin.URL, AdminToken: "tok"}
			var stderr bytes.Buffer
			j, err := scenarioJournal(context.Background(), target, "", endpoints, func(string) string { return "" }, &stderr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("scenarioJournal = %v, want error %v", err, tt.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := "DELETE /admin/edits/limit/holds-per-account Bearer tok"; len(calls) != 1 || calls[0] != want {
				t.Errorf("admin API calls = %q, want [%q]", calls, want)
			}
			_, statErr := os.Stat(path)
			if kept := statErr == nil; kept != tt.wantKept {
				t.Errorf("journal kept = %v, want %v", kept, tt.wantKept)
			}
			if !tt.wantErr && (j == nil || j.Pending() != 0) {
				t.Errorf("journal after the put-back = %+v, want an empty one", j)
			}
			if !strings.Contains(stderr.String(), "putting them back first") {
				t.Errorf("stderr = %q, want the leftover announced", stderr.String())
			}
		})
	}
}

// TestScenarioJournalOfAURLTarget: with a gateway URL as the target, the journal is in
// DATA_DIR, not beside an endpoints file there is none of.
func TestScenarioJournalOfAURLTarget(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string {
		if k == "DATA_DIR" {
			return dir
		}
		return ""
	}
	j, err := scenarioJournal(context.Background(), scenario.Target{}, "", "http://127.0.0.1:8080", getenv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, scenarioJournalFile); j.Path() != want {
		t.Errorf("journal path = %q, want %q", j.Path(), want)
	}
}
