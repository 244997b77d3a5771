package main

import (
	"os/exec"
	"strings"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// `make up` says that it is building before the first, slow build, then runs what it built.
func TestMakeUpSaysItIsBuilding(t *testing.T) {
	makeBin := testkit.LookPath(t, "make")
	out, err := exec.Command(makeBin, "-n", "--no-print-directory", "-C", "../..", "up", "GO=go", "BOXOFFICE_BIN=/cache/boxoffice").Output()
	if err != nil {
		t.Fatalf("make -n up: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{
		`echo "building boxoffice (first build takes a minute or two)…"`,
		`go build -o /cache/boxoffice ./cmd/boxoffice`,
		`exec /cache/boxoffice up`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("make -n up runs\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
