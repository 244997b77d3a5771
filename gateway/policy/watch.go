package policy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// LoadFile reads and parses a policy file.
func LoadFile(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// settle is how long the watcher waits after the last event before reading the file: an
// editor's save is often several events (truncate, write, rename), and reading in between
// would see half a file.
const settle = 100 * time.Millisecond

// WatchFile reloads the policy file into live whenever it changes, until ctx is done. It
// watches the file's directory rather than the file: editors save by writing a new file and
// renaming it over the old one, and Kubernetes swaps a ConfigMap's files by a symlink in the
// directory, and a watch on the old file would see neither. A file that does not parse or
// validate is logged and ignored; the running policy stays.
func WatchFile(ctx context.Context, path string, live *Live, log *slog.Logger) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch policy: %w", err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		return fmt.Errorf("watch policy: %w", err)
	}
	last, _ := os.ReadFile(path) // what is running now, as far as this watcher knows
	timer := time.NewTimer(settle)
	timer.Stop()
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
			timer.Reset(settle) // any event in the directory: the file may be a symlink into it
		case <-timer.C:
			data, err := os.ReadFile(path)
			if err != nil {
				log.Error("policy file unreadable; the running policy stays", "path", path, "error", err)
				continue
			}
			if bytes.Equal(data, last) {
				continue
			}
			last = data
			_ = live.ReplaceFileData(data) // logs its outcome
		}
	}
}
