package scenarios_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// TestK6ScriptsParse checks every k6 script's syntax with Node (k6 runs the same ES module
// syntax; k6 itself is not a dependency of the repository). Each is copied to a .mjs file so
// Node reads it as a module, as k6 does.
func TestK6ScriptsParse(t *testing.T) {
	node := testkit.LookPath(t, "node")
	scripts, err := filepath.Glob("k6/*.js")
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) != 4 {
		// multi-region has none: its regions are built inside the playground, not reached over HTTP.
		t.Errorf("k6 scripts = %v, want one per scenario driven over HTTP (rate-limiter, retry-storm, flash-sale, store-outage)", scripts)
	}
	for _, s := range scripts {
		t.Run(filepath.Base(s), func(t *testing.T) {
			src, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			mjs := filepath.Join(t.TempDir(), "script.mjs")
			if err := os.WriteFile(mjs, src, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(node, "--check", mjs).CombinedOutput(); err != nil {
				t.Errorf("node --check %s: %v\n%s", s, err, out)
			}
		})
	}
}

func TestEveryScenarioHasAK6Script(t *testing.T) {
	yamls, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range yamls {
		doc, err := os.ReadFile(y)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(doc), "\ndriver: multi-region\n") {
			continue // its regions are built inside the playground: there is no HTTP to script
		}
		js := filepath.Join("k6", y[:len(y)-len(".yaml")]+".js")
		if _, err := os.Stat(js); err != nil {
			t.Errorf("scenario %s has no k6 script %s", y, js)
		}
	}
}
