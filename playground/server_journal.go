package playground

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/playground/scenario"
)

// journalFile is the put-back journal's name in DATA_DIR (scenario.Journal): what the
// active run has changed in the system and not yet put back. It lives beside endpoints.json,
// where `boxoffice up` keeps the system's state, so a playground started again over the same
// DATA_DIR finds what a killed one left.
const journalFile = "playground-journal.json"

// The put-back of a dead process's changes is tried again while it fails (the gateway may
// come up after the playground, as in `boxoffice up`): first after replayFirstWait, each wait
// twice the last up to replayMaxWait, replayTries tries in all (about four minutes).
const (
	replayFirstWait = 500 * time.Millisecond
	replayMaxWait   = 10 * time.Second
	replayTries     = 30
)

// errPuttingBack is the answer to a run asked for while the changes of a run a dead process
// left are still being put back: it would measure a system carrying them.
var errPuttingBack = errors.New("the previous run's changes are still being put back")

// openJournal opens the put-back journal in dataDir. One that cannot be read is set aside
// (scenario.OpenJournal) and logged as an error: its changes are not put back, and whoever
// runs the playground has to know; the playground starts with an empty journal.
func openJournal(dataDir string, log *slog.Logger) (*scenario.Journal, error) {
	path := filepath.Join(dataDir, journalFile)
	j, err := scenario.OpenJournal(path)
	switch {
	case errors.Is(err, scenario.ErrCorruptJournal) && j != nil:
		log.Error("a previous run's changes may still be in force: put them back by hand (DELETE /admin/edits on the gateway)", "journal", path, "error", err)
		return j, nil
	case err != nil:
		return nil, fmt.Errorf("open the put-back journal: %w", err)
	}
	return j, nil
}

// checkReplayed refuses a run while a dead process's changes are being put back.
func (rs *runs) checkReplayed() error {
	select {
	case <-rs.replayed:
		return nil
	default:
		return &problem.Error{Code: problem.Unavailable, Err: errPuttingBack,
			Message: errPuttingBack.Error() + "; a run can start once they are (see the playground's log)"}
	}
}

// puttingBack reports whether a dead process's changes are still being put back.
func (rs *runs) puttingBack() bool { return rs.checkReplayed() != nil }

// replay puts back the changes a dead process left in j, trying again with back-off while
// that fails, and closes rs.replayed when done or given up. What it could not put back stays
// in the journal for the next start; runs may start meanwhile, and each puts back only its
// own changes.
func (rs *runs) replay(j *scenario.Journal) {
	defer rs.running.Done()
	defer close(rs.replayed)
	sleep := rs.options.Sleep
	if sleep == nil {
		sleep = clock.Sleep
	}
	rs.log.Warn("the previous playground stopped without putting its run's changes back: putting them back", "changes", j.Pending(), "journal", j.Path())
	wait := replayFirstWait
	for try := 1; ; try++ {
		t, err := rs.target()
		if err == nil {
			// Not cut by the process stopping: a put-back half done is worse than a late one.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(rs.ctx), 30*time.Second)
			err = scenario.PutBack(ctx, t, j, rs.log)
			cancel()
		}
		if err == nil {
			rs.log.Info("the previous run's changes are put back")
			return
		}
		if try == replayTries {
			rs.log.Error("gave up putting back the previous run's changes; they stay in the journal for the next start", "left", j.Pending(), "journal", j.Path(), "error", err)
			return
		}
		rs.log.Warn("put back the previous run's changes: trying again", "in", wait.String(), "error", err)
		if sleep(rs.ctx, wait) != nil {
			rs.log.Warn("the playground stopped before the previous run's changes were put back; they stay in the journal", "left", j.Pending(), "journal", j.Path())
			return
		}
		wait = min(2*wait, replayMaxWait)
	}
}
