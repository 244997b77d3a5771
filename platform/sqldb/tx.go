package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// maxTxAttempts bounds how often InTx runs a transaction that keeps failing with a transient
// conflict. Five attempts over a few milliseconds ride out lock contention between
// instances; beyond that the database is overloaded and the caller should hear so.
const maxTxAttempts = 5

// InTx runs fn in a transaction, committed when fn returns nil and rolled back otherwise.
// When the database reports a transient conflict (Retryable) the whole transaction runs
// again, up to five times with a pause of a few milliseconds growing each time, so fn may run
// more than once and must not keep state from a failed run.
//
// fn's own error is returned as it is (joined with a failed rollback, if any): a
// *problem.Error from fn is an answer, not a failure. A cancelled ctx ends the retries.
func (db *DB) InTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.tryTx(ctx, fn)
		if err == nil || attempt == maxTxAttempts || !Retryable(err) {
			return err
		}
		pause := time.NewTimer(time.Duration(attempt) * 2 * time.Millisecond)
		select {
		case <-ctx.Done():
			pause.Stop()
			return errors.Join(err, ctx.Err())
		case <-pause.C:
		}
	}
}

func (db *DB) tryTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Retryable reports whether err is a transient conflict worth running the transaction again
// for: SQLITE_BUSY or SQLITE_LOCKED (another writer held the lock past the busy timeout), or
// PostgreSQL's serialization failure and deadlock detection. The driver errors are matched
// by method, so callers need neither driver's types.
func Retryable(err error) bool {
	if e, ok := errors.AsType[interface {
		error
		SQLState() string
	}](err); ok {
		switch e.SQLState() {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
	}
	if e, ok := errors.AsType[interface {
		error
		Code() int
	}](err); ok {
		switch e.Code() & 0xff { // the primary code; extended codes add high bits
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
	}
	return false
}
