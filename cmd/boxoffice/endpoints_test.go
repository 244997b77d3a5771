package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The endpoints file holds the admin token and the partners' keys: only its owner may read
// it, whether it is new or left world-readable by an earlier run.
func TestEndpointsFileIsTheOwners(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		pre  bool
	}{{"new", false}, {"left by an earlier run", true}} {
		path := filepath.Join(dir, tt.name+".json")
		if tt.pre {
			if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeJSON(path, Endpoints{Admin: Admin{Token: "secret"}}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: endpoints file mode = %v, want -rw-------", tt.name, got)
		}
	}
}
