package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// A policy without routes answers 404 to everything: an empty file, a comment-only file and
// an admin edit that removes the last route must all be refused.
func TestPolicyWithoutRoutesIsRefused(t *testing.T) {
	tests := []struct {
		name string
		doc  string
	}{
		{"empty file", ""},
		{"comment only", "# the policy is being rewritten\n"},
		{"document marker only", "---\n"},
		{"services but no routes", "services:\n  - {name: inventory, instances: [\"http://127.0.0.1:8104\"]}\n"},
		{"empty route list", "services:\n  - {name: inventory, instances: [\"http://127.0.0.1:8104\"]}\nroutes: []\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatalf("Parse(%q) = %v, want a policy for Compile to judge", tt.doc, err)
			}
			_, err = Compile(p, nil)
			if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != "routes" {
				t.Errorf("Compile(%q) = %v, want an error naming routes", tt.doc, err)
			}
		})
	}
}

func TestLiveKeepsRunningPolicyOverFileWithoutRoutes(t *testing.T) {
	l := newLive(t, base)
	before := l.Current()
	for _, doc := range []string{"", "# nothing yet\n"} {
		err := l.ReplaceFileData([]byte(doc))
		if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != "routes" {
			t.Errorf("ReplaceFileData(%q) = %v, want an error naming routes", doc, err)
		}
		if l.Current() != before {
			t.Errorf("ReplaceFileData(%q) replaced the running policy", doc)
		}
	}
}

// A policy file emptied, or left with comments only, must be logged and ignored, not served.
func TestWatchFileIgnoresEmptyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs testkit.Buffer
	l := newLive(t, base)
	l.log = slog.New(slog.NewTextHandler(&logs, nil))
	good := l.Current()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- WatchFile(ctx, path, l, l.log) }()
	t.Cleanup(func() { cancel(); <-done })

	// The watch is set up asynchronously: empty the file again until the rejection is seen,
	// each time with a different comment so that the watcher sees a change.
	polls := 0
	testkit.Eventually(t, 5*time.Second, "an empty policy file is rejected", func() bool {
		if polls%50 == 0 {
			_ = os.WriteFile(path, fmt.Appendf(nil, "# emptied %d\n", polls), 0o644)
		}
		polls++
		return l.Rejected() != nil
	})
	if l.Current() != good {
		t.Errorf("an empty policy file replaced the running policy")
	}
	if err := l.Rejected(); !strings.Contains(err.Error(), "routes:") {
		t.Errorf("Rejected() = %v, want it to name routes", err)
	}
	if got := logs.String(); !strings.Contains(got, "policy change rejected") || !strings.Contains(got, "routes:") {
		t.Errorf("log = %q, want the rejection naming routes", got)
	}
}
