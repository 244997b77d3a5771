package deploycheck

import (
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDockerfile(t *testing.T) {
	w := loadWorkspace(t)
	df, err := ParseDockerfile(filepath.Join(w.Root, "Dockerfile"))
	if err != nil {
		t.Fatalf("ParseDockerfile = %v", err)
	}
	if err := CheckDockerfile(w, df); err != nil {
		t.Errorf("CheckDockerfile(Dockerfile) = %v", err)
	}
}

// TestDockerfileBroken changes one thing of the real Dockerfile at a time: each change must
// be reported.
func TestDockerfileBroken(t *testing.T) {
	w := loadWorkspace(t)
	src, err := os.ReadFile(filepath.Join(w.Root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"main package moved", `"./${MODULE}/cmd/${MODULE##*/}"`, `"./${MODULE}/cmd"`, "go build with MODULE=services/catalog builds"},
		{"cgo left on", "CGO_ENABLED=0 go build", "go build", "go build runs without CGO_ENABLED=0"},
		{"healthcheck not built", " ./cmd/healthcheck &&", " &&", "not ./cmd/healthcheck"},
		{"root user", "USER 65532:65532", "USER root", `runtime USER "root"`},
		{"image with a shell", "FROM gcr.io/distroless/static-debian12:nonroot", "FROM alpine:3.22", "runtime image alpine:3.22"},
		{"old Go", "ARG GO_VERSION=1.26.8", "ARG GO_VERSION=1.25.4", "GO_VERSION=1.25.4 is older than go.work's go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(string(src), tt.old) {
				t.Fatalf("Dockerfile has no %q to change", tt.old)
			}
			file := filepath.Join(t.TempDir(), "Dockerfile")
			if err := os.WriteFile(file, []byte(strings.Replace(string(src), tt.old, tt.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			df, err := ParseDockerfile(file)
			if err != nil {
				t.Fatalf("ParseDockerfile = %v", err)
			}
			if err := CheckDockerfile(w, df); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckDockerfile(%s → %s) = %v, want an error containing %q", tt.old, tt.new, err, tt.want)
			}
		})
	}
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`go build -o /out/ ./x`, []string{"go", "build", "-o", "/out/", "./x"}},
		{`-ldflags="-s -w" "./${MODULE}/cmd"`, []string{"-ldflags=-s -w", "./${MODULE}/cmd"}},
		{`  a  'b c'd ""  `, []string{"a", "b cd", ""}},
	}
	for _, tt := range tests {
		if got := shellWords(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("shellWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDockerfileBuild runs the Dockerfile's own `go build` line for every deployable (there
// is no Docker engine here): a main package moved, a build flag that breaks the build or a
// binary that is not static fails here rather than in `docker compose build`.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every deployable (about a minute on two cores)")
	}
	w := loadWorkspace(t)
	df, err := ParseDockerfile(filepath.Join(w.Root, "Dockerfile"))
	if err != nil {
		t.Fatalf("ParseDockerfile = %v", err)
	}
	dir := t.TempDir()
	cmd := df.Build.Command(w, dir)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	t.Logf("%s: %v", strings.Join(cmd.Args, " "), time.Since(start).Round(time.Second))

	binaries := []string{"healthcheck"}
	for _, d := range w.Deployables {
		// The file the image runs, as the Dockerfile's mv names it, in dir instead of /out/.
		binaries = append(binaries, strings.TrimPrefix(Expand(df.Binary, d.Module), df.Build.Out))
	}
	for _, name := range binaries {
		t.Run(name, func(t *testing.T) {
			if err := staticELF(filepath.Join(dir, name)); err != nil {
				t.Error(err)
			}
		})
	}
}

// staticELF returns an error unless path is an executable that needs no dynamic loader and
// no shared library: what runs on distroless/static (or scratch).
func staticELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return &os.PathError{Op: "static", Path: path, Err: os.ErrInvalid}
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return &os.PathError{Op: "static: needs " + strings.Join(libs, ", "), Path: path, Err: os.ErrInvalid}
	}
	return nil
}
