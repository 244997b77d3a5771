package policystore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
)

// OpenTimeout bounds one attempt at opening and migrating the database (Store.Open), so a
// database that neither answers nor refuses delays the gateway's start by at most this much.
const OpenTimeout = 10 * time.Second

// Store is the policy tables of a database that may not be reachable yet. Until it has been
// opened (Open, Await) every call answers 503 (problem.Unavailable) rather than keeping an
// edit on this replica alone, and a failing database call is a 503 too: a database outage
// is for the caller to try again, not a fault of the gateway's. The zero value is not
// usable; build one with New. Safe for concurrent use.
type Store struct {
	opts sqldb.Options
	log  *slog.Logger

	opening sync.Mutex // one Open at a time
	table   atomic.Pointer[Table]
	db      atomic.Pointer[sqldb.DB]
}

// New returns the store of the database opts names, not opened yet; log (nil = discard)
// hears of each attempt Await makes.
func New(opts sqldb.Options, log *slog.Logger) *Store {
	if log == nil {
		log = logging.Discard()
	}
	return &Store{opts: opts, log: log}
}

// Open opens the database and applies the tables' migrations, within OpenTimeout, and
// returns the tables; once it has succeeded it returns them at once.
func (s *Store) Open(ctx context.Context) (*Table, error) {
	s.opening.Lock()
	defer s.opening.Unlock()
	if t := s.table.Load(); t != nil {
		return t, nil
	}
	ctx, cancel := context.WithTimeout(ctx, OpenTimeout)
	defer cancel()
	db, err := sqldb.Open(ctx, s.opts)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, Migrations()); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("policy tables: %w", err)
	}
	s.db.Store(db)
	t := NewTable(db, clock.Clock{})
	s.table.Store(t)
	return t, nil
}

// Await returns the tables once the database is open, trying to open it every interval
// until it answers, or ctx's error once ctx is done.
func (s *Store) Await(ctx context.Context, every time.Duration) (*Table, error) {
	for {
		if t := s.table.Load(); t != nil {
			return t, nil
		}
		wait := time.NewTimer(every)
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil, ctx.Err()
		case <-wait.C:
		}
		if _, err := s.Open(ctx); err != nil {
			s.log.WarnContext(ctx, "policy database still not reachable; serving from the policy file", "error", err)
			continue
		}
		s.log.InfoContext(ctx, "policy database reachable; reading the policy tables")
	}
}

// Close closes the database, if it was opened.
func (s *Store) Close() error {
	if db := s.db.Load(); db != nil {
		return db.Close()
	}
	return nil
}

// errNotOpen answers a call that needs the database while it cannot be reached.
var errNotOpen = problem.New(problem.Unavailable, "the policy database is not reachable; try again later")

func (s *Store) Load(ctx context.Context) ([]policy.TenantRule, error) {
	return read(s, func(t *Table) ([]policy.TenantRule, error) { return t.Load(ctx) })
}

func (s *Store) LoadEdits(ctx context.Context) ([]policy.Edit, error) {
	return read(s, func(t *Table) ([]policy.Edit, error) { return t.LoadEdits(ctx) })
}

func (s *Store) Put(ctx context.Context, r policy.TenantRule) error {
	return s.write(func(t *Table) error { return t.Put(ctx, r) })
}

func (s *Store) Delete(ctx context.Context, tenant, route string) error {
	return s.write(func(t *Table) error { return t.Delete(ctx, tenant, route) })
}

func (s *Store) PutEdit(ctx context.Context, e policy.Edit) error {
	return s.write(func(t *Table) error { return t.PutEdit(ctx, e) })
}

func (s *Store) DeleteEdit(ctx context.Context, kind policy.EditKind, id string) error {
	return s.write(func(t *Table) error { return t.DeleteEdit(ctx, kind, id) })
}

func (s *Store) ResetEdits(ctx context.Context) error {
	return s.write(func(t *Table) error { return t.ResetEdits(ctx) })
}

func (s *Store) ListChanges(ctx context.Context, q ChangeQuery) (ChangePage, error) {
	return read(s, func(t *Table) (ChangePage, error) { return t.ListChanges(ctx, q) })
}

// InTx runs fn on the tables in one transaction (Table.InTx), or answers 503 while the
// database cannot be reached.
func (s *Store) InTx(ctx context.Context, fn func(*Table) error) error {
	return s.write(func(t *Table) error { return t.InTx(ctx, fn) })
}

// RecordChange records a change that is not a write to these tables (a reload of the
// policy file) in the audit trail: Table.RecordChange, or 503 while the database cannot be
// reached.
func (s *Store) RecordChange(ctx context.Context, c policy.Change) (policy.Change, error) {
	return read(s, func(t *Table) (policy.Change, error) { return t.RecordChange(ctx, c) })
}

// read calls f with s's tables, or answers errNotOpen before they are open.
func read[T any](s *Store, f func(*Table) (T, error)) (T, error) {
	if t := s.table.Load(); t != nil {
		v, err := f(t)
		return v, storeFailed(err)
	}
	var zero T
	return zero, errNotOpen
}

// write calls f with s's tables, or answers errNotOpen before they are open.
func (s *Store) write(f func(*Table) error) error {
	if t := s.table.Load(); t != nil {
		return storeFailed(f(t))
	}
	return errNotOpen
}

// storeFailed makes a failed database call a 503: the tables hold no logic that can fail on
// its own, so an error there is the database gone or failing (a lost connection, a full
// disk), which is for the caller to try again, not a fault of the gateway's (500). Errors
// that already say what they are stay as they are.
func storeFailed(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*problem.Error](err); ok {
		return err
	}
	return &problem.Error{Code: problem.Unavailable, Message: "the policy database failed; try again later", Err: err}
}
