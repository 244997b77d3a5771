package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Each start moves the logs of earlier runs along and keeps keptLogs of them, the newest
// first; the oldest beyond those is dropped.
func TestOpenLogKeepsEarlierRuns(t *testing.T) {
	dir := t.TempDir()
	for run := 1; run <= keptLogs+2; run++ {
		f, err := openLog(dir, "order-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("run " + strconv.Itoa(run)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	last := keptLogs + 2
	for n := 0; n <= keptLogs; n++ {
		path := filepath.Join(dir, "order-1.log")
		if n > 0 {
			path += "." + strconv.Itoa(n)
		}
		b, err := os.ReadFile(path)
		if want := "run " + strconv.Itoa(last-n); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", filepath.Base(path), b, err, want)
		}
	}
	older := filepath.Join(dir, "order-1.log."+strconv.Itoa(keptLogs+1))
	if _, err := os.Stat(older); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists (stat: %v), want only %d earlier runs kept", filepath.Base(older), err, keptLogs)
	}
}
