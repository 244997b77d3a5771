package deploy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestK6ScriptsPutKnobsBack runs each k6 script of scenarios/k6 (the scripts the compose k6
// service runs) once in Node, with stand-ins for k6's modules (testdata/k6): setup, each
// scenario's function, teardown. The services' control hooks start with knobs a script would
// not set itself; after the run each must hold them again. A script that leaves the catalog
// throttled to its scenario's capacity, or resets it to zero instead of to what it was,
// fails here.
func TestK6ScriptsPutKnobsBack(t *testing.T) {
	node := testkit.LookPath(t, "node")
	w := loadWorkspace(t)
	scripts, err := filepath.Glob(filepath.Join(w.Root, "scenarios", "k6", "*.js"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no k6 scripts (%v)", err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "node_modules", "k6"), os.DirFS(filepath.Join("testdata", "k6", "k6"))); err != nil {
		t.Fatal(err)
	}
	harness, err := os.ReadFile(filepath.Join("testdata", "k6", "run.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.mjs"), harness, 0o644); err != nil {
		t.Fatal(err)
	}

	const knobs = `{"latency_ms":3,"error_rate":0.25,"outage":false,"max_concurrent":9,"service_time_ms":7}`
	writes := 0
	for _, s := range scripts {
		t.Run(filepath.Base(s), func(t *testing.T) {
			src, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			// Beside node_modules, so the script's imports of k6 find the stand-ins.
			script := filepath.Join(dir, filepath.Base(s)+".mjs")
			if err := os.WriteFile(script, src, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "run.mjs"), script)
			cmd.Env = append(os.Environ(),
				"BASE_URL=http://edge",
				"CONTROL_URLS=http://catalog-1:8102,http://catalog-2:8102",
				"HOOK_KNOBS="+knobs)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node run.mjs %s: %v\n%s", filepath.Base(s), err, stderr(err))
			}
			var run struct {
				Before, After map[string]any
				Writes        int
			}
			if err := json.Unmarshal(out, &run); err != nil {
				t.Fatalf("harness output %q: %v", out, err)
			}
			if len(run.Before) != 2 {
				t.Fatalf("hooks before the run = %v, want the two of CONTROL_URLS", run.Before)
			}
			if !reflect.DeepEqual(run.After, run.Before) {
				t.Errorf("knobs after the run = %v, want them put back: %v", run.After, run.Before)
			}
			writes += run.Writes
		})
	}
	if writes == 0 {
		t.Error("no script changed a knob: the harness reached none of their control calls")
	}
}

// stderr is what a failed command wrote to its standard error.
func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
