package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// watchFile starts WatchFile on path for l until the test ends.
func watchFile(t *testing.T, path string, l *Live) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- WatchFile(ctx, path, l, l.log) }()
	t.Cleanup(func() { cancel(); <-done })
}

// loadLive writes doc to a policy file and loads a Live from it, as the gateway starts.
func loadLive(t *testing.T, doc string) (*Live, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l, path
}

// A change saved after the gateway loaded the file but before its watch began reaches the
// watcher as no event at all: the watcher must still apply it.
func TestWatchFileAppliesChangeMadeBeforeTheWatch(t *testing.T) {
	l, path := loadLive(t, base)
	if err := os.WriteFile(path, []byte(strings.Replace(base, "rate: 5/1m", "rate: 7/1m", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	watchFile(t, path, l)
	testkit.Eventually(t, 3*time.Second, "a change made before the watch is applied", func() bool {
		return l.Current().Limit("holds-per-account").Rule.Limit == 7
	})
}

// A directory that never falls quiet, another file written there all the time, must not
// hold a change to the policy file back for ever.
func TestWatchFileAppliesChangeDuringChurn(t *testing.T) {
	l, path := loadLive(t, base)
	watchFile(t, path, l)
	dir := filepath.Dir(path)

	// Wait for the watch to be running: a first change is applied.
	polls := 0
	testkit.Eventually(t, 5*time.Second, "a first change is applied", func() bool {
		if polls%50 == 0 {
			_ = os.WriteFile(path, fmt.Appendf([]byte(strings.Replace(base, "rate: 5/1m", "rate: 6/1m", 1)), "# save %d\n", polls), 0o644)
		}
		polls++
		return l.Current().Limit("holds-per-account").Rule.Limit == 6
	})

	if err := os.WriteFile(path, []byte(strings.Replace(base, "rate: 5/1m", "rate: 7/1m", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every poll (10ms) writes a log file beside the policy: an event well within settle.
	churn := filepath.Join(dir, "access.log")
	n := 0
	testkit.Eventually(t, 3*time.Second, "a change is applied while the directory churns", func() bool {
		n++
		_ = os.WriteFile(churn, fmt.Appendf(nil, "line %d\n", n), 0o644)
		return l.Current().Limit("holds-per-account").Rule.Limit == 7
	})
}
