package reload

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"boxoffice.dev/gateway/policy"
)

// settle is how long the watcher waits after the last event before reading the file: a save
// is often several events (truncate, write, rename), and reading in between would see half a
// file. settleAtMost bounds the wait from a burst's first event, so a directory that never
// falls quiet costs a read a second instead of holding a change back for ever. The price: a
// save still going on after a second is read half done (likely refused), then read again.
const (
	settle       = 100 * time.Millisecond
	settleAtMost = time.Second
)

// Reloaded hears each change of the policy file that WatchFile put in force, with the file
// as parsed before and after. It runs on the watch's goroutine once the change is in force:
// a slow one delays the next reload, never this one. RecordReloads makes one.
type Reloaded func(ctx context.Context, path string, before, after *policy.Policy)

// WatchFile reloads the policy file into live whenever it changes, until ctx is done, and
// tells reloaded (nil = no one) of each change it applied. It watches the directory, since
// editors rename a new file over the old one and Kubernetes swaps a ConfigMap's files by a
// symlink, and reads the file once the watch is set, catching a change made before it. A
// file that does not parse or validate is logged and ignored.
func WatchFile(ctx context.Context, path string, live *policy.Live, log *slog.Logger, reloaded Reloaded) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch policy: %w", err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		return fmt.Errorf("watch policy: %w", err)
	}
	var last []byte // the file as last read
	read := false
	check := func() {
		data, err := os.ReadFile(path)
		if err != nil {
			log.Error("policy file unreadable; the running policy stays", "path", path, "error", err)
			return
		}
		if read && bytes.Equal(data, last) {
			return
		}
		first := !read
		read, last = true, data
		// The first read is compared with the policy live was loaded from, not taken as it:
		// a change between that load and the watch is still applied.
		if first {
			if p, err := policy.Parse(data); err == nil && live.RunsFile(p) {
				return
			}
		}
		before := live.File()
		if err := live.ReplaceFileData(data); err == nil && reloaded != nil { // logs its outcome
			reloaded(ctx, path, before, live.File())
		}
	}

	quiet := time.NewTimer(settle) // the first read
	longest := time.NewTimer(settleAtMost)
	longest.Stop()
	burst := false // events came since the last read: longest is running
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Warn("policy watch", "error", err)
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			quiet.Reset(settle) // any event in the directory: the file may be a symlink into it
			if !burst {
				longest.Reset(settleAtMost)
				burst = true
			}
		case <-quiet.C:
			longest.Stop()
			burst = false
			check()
		case <-longest.C:
			quiet.Stop()
			burst = false
			check()
		}
	}
}
