package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// Asked for help anywhere, the CLI prints the usage on stdout and succeeds, and starts nothing.
func TestHelpPrintsUsageAndSucceeds(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{
		{"-h"}, {"--help"}, {"help"},
		{"up", "-h"}, {"up", "--help"}, {"up", "--data-dir", dataDir, "--port-offset", "5000", "-h"},
		{"lab", "-h"}, {"lab", "--help"},
		{"scenario", "-h"}, {"scenario", "--help"}, {"scenario", "help"},
		{"scenario", "list", "-h"},
		{"scenario", "run", "-h"}, {"scenario", "run", "--help"}, {"scenario", "run", "rate-limiter", "--help"},
	} {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			var stdout, stderr testkit.Buffer
			if err := run(context.Background(), append([]string{"boxoffice"}, args...), func(string) string { return "" }, &stdout, &stderr); err != nil {
				t.Fatalf("boxoffice %s = %v, want nil\n%s", name, err, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), "usage:") {
				t.Errorf("boxoffice %s printed %q on stdout, want the usage", name, stdout.String())
			}
			if stderr.String() != "" {
				t.Errorf("boxoffice %s printed %q on stderr, want nothing", name, stderr.String())
			}
		})
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("boxoffice up -h made its data dir (stat: %v), want nothing started", err)
	}
}

// A mistake is still an error, with the usage on stderr.
func TestBadFlagIsAnError(t *testing.T) {
	for _, args := range [][]string{{"up", "--no-such-flag"}, {"scenario", "run"}, {"scenario", "list", "extra"}, {"lab"}} {
		name := strings.Join(args, " ")
		var stdout, stderr testkit.Buffer
		err := run(context.Background(), append([]string{"boxoffice"}, args...), func(string) string { return "" }, &stdout, &stderr)
		if err == nil {
			t.Errorf("boxoffice %s = nil, want an error", name)
		}
		if stdout.String() != "" {
			t.Errorf("boxoffice %s printed %q on stdout, want nothing", name, stdout.String())
		}
	}
}
