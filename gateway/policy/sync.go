package policy

import (
	"context"
	"errors"
	"fmt"
)

// ErrEditsRefused wraps the error of SyncEdits when live refused the edits it read: the
// table was read, and reading it again will not help.
var ErrEditsRefused = errors.New("stored edits refused")

// ErrEditsBusy is SyncEdits's error when the edits kept changing on this replica while it
// read the table: live keeps what it holds, and the next reload reads again.
var ErrEditsBusy = errors.New("admin edits kept changing while the table was read")

// syncEditsReads bounds how often SyncEdits reads the table while edits keep changing on this
// replica: each change is announced, and the reload it brings reads the table again.
const syncEditsReads = 3

// SyncEdits makes live's admin edits the stored ones, read with load (a policystore.Table's
// LoadEdits). A change this replica makes while the table is being read is not undone: the
// rows read may predate it, so they are read again (see Live.ReplaceEditsAt), at most
// syncEditsReads times, after which live keeps what it holds and ErrEditsBusy says so.
func SyncEdits(ctx context.Context, load func(context.Context) ([]Edit, error), live *Live) error {
	for range syncEditsReads {
		version := live.EditsVersion()
		edits, err := load(ctx)
		if err != nil {
			return err
		}
		replaced, err := live.ReplaceEditsAt(version, edits)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrEditsRefused, err)
		}
		if replaced {
			return nil
		}
	}
	return ErrEditsBusy
}
