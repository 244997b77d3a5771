package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// keptLogs is how many earlier runs' logs `up` keeps beside the current one's: name.log.1 is
// the last run's, name.log.3 the oldest.
const keptLogs = 3

// openLog creates dir/name.log for this run, first moving the logs of earlier runs along
// (name.log to name.log.1, name.log.1 to name.log.2, …, dropping the oldest): the log of a
// run that crashed is still there to read after the next start.
func openLog(dir, name string) (*os.File, error) {
	path := filepath.Join(dir, name+".log")
	older := func(n int) string {
		if n == 0 {
			return path
		}
		return fmt.Sprintf("%s.%d", path, n)
	}
	for n := keptLogs; n > 0; n-- {
		if err := os.Rename(older(n-1), older(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("keep the earlier log: %w", err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create log file: %w", err)
	}
	return f, nil
}
