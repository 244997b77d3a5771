package reload

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/testkit"
)

// base is the policy package's test policy: a small valid one.
var base = func() string {
	b, err := os.ReadFile("../testdata/base.yaml")
	if err != nil {
		panic(err) // the fixture is part of the module
	}
	return string(b)
}()

// watchFile starts WatchFile on path for l until the test ends, logging to log (nil
// discards).
func watchFile(t *testing.T, path string, l *policy.Live, log *slog.Logger) {
	t.Helper()
	if log == nil {
		log = logging.Discard()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- WatchFile(ctx, path, l, log, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchFile() = %v, want nil", err)
		}
	})
}

// loadLive writes doc to a policy file and loads a Live from it, as the gateway starts; the
// Live logs to log (nil discards).
func loadLive(t *testing.T, doc string, log *slog.Logger) (*policy.Live, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := policy.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := policy.NewLive(p, log)
	if err != nil {
		t.Fatal(err)
	}
	return l, path
}

// A change saved after the gateway loaded the file but before its watch began reaches the
// watcher as no event at all: the watcher must still apply it.
func TestWatchFileAppliesChangeMadeBeforeTheWatch(t *testing.T) {
	l, path := loadLive(t, base, nil)
	if err := os.WriteFile(path, []byte(strings.Replace(base, "rate: 5/1m", "rate: 7/1m", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	watchFile(t, path, l, nil)
	testkit.Eventually(t, 3*time.Second, "a change made before the watch is applied", func() bool {
		return l.Current().Limit("holds-per-account").Rule.Limit == 7
	})
}

// A directory that never falls quiet, another file written there all the time, must not
// hold a change to the policy file back for ever.
func TestWatchFileAppliesChangeDuringChurn(t *testing.T) {
	l, path := loadLive(t, base, nil)
	watchFile(t, path, l, nil)
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

func TestWatchFile(t *testing.T) {
	l, path := loadLive(t, base, nil)
	watchFile(t, path, l, nil)

	// The watch is set up asynchronously: rewrite until the change is seen.
	changed := strings.Replace(base, "rate: 5/1m", "rate: 7/1m", 1)
	polls := 0
	testkit.Eventually(t, 5*time.Second, "an edited policy file is applied", func() bool {
		// Save as editors do: write a new file and rename it over the old one. Saving again
		// every half second covers a watch not yet set up, without resetting its settle
		// delay on every poll.
		if polls%50 == 0 {
			tmp := filepath.Join(filepath.Dir(path), ".policy.yaml.tmp")
			_ = os.WriteFile(tmp, []byte(changed+fmt.Sprintf("# save %d\n", polls)), 0o644)
			_ = os.Rename(tmp, path)
		}
		polls++
		return l.Current().Limit("holds-per-account").Rule.Limit == 7
	})

	good := l.Current()
	if err := os.WriteFile(path, []byte(strings.Replace(changed, "service: inventory", "service: nowhere", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "a bad policy file is rejected", func() bool { return l.Rejected() != nil })
	if l.Current() != good {
		t.Errorf("a bad policy file replaced the running policy")
	}
	if err := l.Rejected(); !strings.Contains(err.Error(), "routes[holds].service") {
		t.Errorf("Rejected() = %v, want it to name routes[holds].service", err)
	}
}

// A policy file emptied, or left with comments only, must be logged and ignored, not served.
func TestWatchFileIgnoresEmptyFile(t *testing.T) {
	var logs testkit.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	l, path := loadLive(t, base, log)
	good := l.Current()
	watchFile(t, path, l, log)

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
