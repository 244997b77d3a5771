package order

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/sqldb/keyset"
)

// errStale means another writer moved the order since it was read; the caller reloads.
var errStale = errors.New("order changed meanwhile")

// Store keeps orders, their idempotency records and their events (through the outbox) in
// SQLite or PostgreSQL. It is safe for concurrent use, and several Stores (instances) may
// share a database: every write is a transaction guarded by a unique key or a version. Make
// one as &Store{DB: db}; every other field's zero value is its default.
type Store struct {
	// DB holds the schema of Migrations and the outbox table. Required.
	DB *sqldb.DB
	// Clock stamps orders and events; the zero Clock is time.Now.
	Clock clock.Clock
	// IDs makes order ids; nil means ids.New.
	IDs ids.Func
	// Committed is called after a transaction that added events commits (the outbox
	// relay's Notify); nil means nothing to wake.
	Committed func()
}

// NewOrder is a pending order of account for h, priced by lines and total; not yet stored.
func (s *Store) NewOrder(account string, h Hold, lines []Line, total money.Money) Order {
	now := s.Clock.Now().UTC()
	return Order{ID: s.IDs.New("ord_"), Account: account, HoldID: h.ID, EventID: h.EventID, Lines: lines, Amount: total,
		State: Pending, CreatedAt: now, UpdatedAt: now}
}

// Replay returns the order an earlier request with req's key created, if any: found is false
// when the key is new. The same key with another request is an Unprocessable problem.
func (s *Store) Replay(ctx context.Context, req CreateRequest) (o Order, found bool, err error) {
	var hash, id string
	err = s.DB.QueryRowContext(ctx, s.DB.Rebind(`SELECT request_hash, order_id FROM order_idempotency WHERE account = ? AND idempotency_key = ?`),
		req.Account, req.IdempotencyKey).Scan(&hash, &id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Order{}, false, nil
	case err != nil:
		return Order{}, false, fmt.Errorf("read idempotency key: %w", err)
	case hash != req.Hash():
		return Order{}, false, &problem.Error{Code: problem.Unprocessable, Field: IdempotencyKeyHeader,
			Message: "this key was used for another request; use a new key for a new order"}
	}
	o, err = s.Get(ctx, id)
	return o, err == nil, err
}

// Create stores o with req's idempotency record and its created event, in one transaction,
// and returns it with created true. When req's key is already taken (a retry, or a concurrent
// twin that won) it stores nothing and returns Replay's answer instead; a hold that already
// has an order under another key is a Conflict. See docs/architecture.md, "Idempotency keys".
func (s *Store) Create(ctx context.Context, req CreateRequest, o Order) (Order, bool, error) {
	lines, err := json.Marshal(o.Lines)
	if err != nil {
		return Order{}, false, fmt.Errorf("create order: %w", err)
	}
	o.Version = 1
	taken := false
	err = s.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO order_idempotency (account, idempotency_key, request_hash, order_id, created_us)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (account, idempotency_key) DO NOTHING`),
			req.Account, req.IdempotencyKey, req.Hash(), o.ID, o.CreatedAt.UnixMicro())
		if taken, err = noRows(res, err); err != nil || taken {
			return err
		}
		res, err = tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO orders (id, account, hold_id, event_id, lines, currency, amount_minor,
			state, version, created_us, updated_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hold_id) DO NOTHING`),
			o.ID, o.Account, o.HoldID, o.EventID, string(lines), o.Amount.Currency, o.Amount.Minor, o.State, o.Version,
			o.CreatedAt.UnixMicro(), o.UpdatedAt.UnixMicro())
		if held, err := noRows(res, err); err != nil || held {
			return errors.Join(err, boolErr(held, problem.New(problem.Conflict, "hold %s already has an order", o.HoldID)))
		}
		return outbox.Add(ctx, tx, s.DB, orderEvent(o, Created))
	})
	switch {
	case err != nil:
		return Order{}, false, fmt.Errorf("create order: %w", err)
	case taken:
		o, _, err := s.Replay(ctx, req)
		return o, false, err
	}
	s.committed()
	return o, true, nil
}

// Save writes o over the version it was read at (from), with its event when o's state is
// final. It fails with errStale when another writer got there first.
func (s *Store) Save(ctx context.Context, o Order) (Order, error) {
	from := o.Version
	o.Version++
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE orders SET state = ?, failure_reason = ?, charge_id = ?, attempts = ?,
			version = ?, updated_us = ? WHERE id = ? AND version = ?`),
			o.State, o.FailureReason, o.ChargeID, o.Attempts, o.Version, o.UpdatedAt.UnixMicro(), o.ID, from)
		if stale, err := noRows(res, err); err != nil || stale {
			return errors.Join(err, boolErr(stale, errStale))
		}
		if !o.State.Final() {
			return nil
		}
		return outbox.Add(ctx, tx, s.DB, orderEvent(o, Verb(o.State)))
	})
	if err != nil {
		return Order{}, fmt.Errorf("save order %s: %w", o.ID, err)
	}
	if o.State.Final() {
		s.committed()
	}
	return o, nil
}

// Get returns the order with id, or NotFound.
func (s *Store) Get(ctx context.Context, id string) (Order, error) {
	o, err := scanOrder(s.DB.QueryRowContext(ctx, s.DB.Rebind(`SELECT `+orderColumns+` FROM orders WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, &problem.Error{Code: problem.NotFound, Message: "no order " + id, Err: err}
	}
	if err != nil {
		return Order{}, fmt.Errorf("get order: %w", err)
	}
	return o, nil
}

// Page is one page of orders; Next is the cursor of the following page, "" on the last.
type Page struct {
	Orders []Order `json:"orders"`
	Next   string  `json:"next_cursor,omitempty"`
}

// newestFirst is the list List pages through.
var newestFirst = keyset.List[Order]{
	Select: `SELECT ` + orderColumns + ` FROM orders`,
	Order:  keyset.Order{Key: "created_us", Desc: true},
	Scan:   scanOrder,
	Cursor: func(o Order) keyset.Cursor { return keyset.Cursor{Key: o.CreatedAt.UnixMicro(), ID: o.ID} },
}

// List returns account's orders newest first, limit at a time (0 = DefaultPageSize, at most
// MaxPageSize), from cursor ("" = the newest).
func (s *Store) List(ctx context.Context, account string, limit int, cursor string) (Page, error) {
	orders, next, err := newestFirst.Page(ctx, s.DB, limit, cursor, "account = ?", account)
	if err != nil {
		return Page{}, fmt.Errorf("list orders: %w", err)
	}
	return Page{Orders: orders, Next: next}, nil
}

// Stalled returns up to limit orders in a non-final state not written since before: sagas
// whose instance died or whose last step failed, for the recovery loop to resume.
func (s *Store) Stalled(ctx context.Context, before time.Time, limit int) ([]Order, error) {
	out, err := sqldb.Query(ctx, s.DB, s.DB, `SELECT `+orderColumns+` FROM orders
		WHERE state NOT IN (?, ?) AND updated_us < ? ORDER BY updated_us LIMIT ?`,
		[]any{Confirmed, Failed, before.UnixMicro(), limit}, scanOrder)
	if err != nil {
		return nil, fmt.Errorf("stalled orders: %w", err)
	}
	return out, nil
}

const orderColumns = `id, account, hold_id, event_id, lines, currency, amount_minor, state, failure_reason, charge_id,
	attempts, version, created_us, updated_us`

func scanOrder(row sqldb.Scanner) (Order, error) {
	var o Order
	var lines string
	var created, updated int64
	err := row.Scan(&o.ID, &o.Account, &o.HoldID, &o.EventID, &lines, &o.Amount.Currency, &o.Amount.Minor, &o.State,
		&o.FailureReason, &o.ChargeID, &o.Attempts, &o.Version, &created, &updated)
	if err != nil {
		return Order{}, err
	}
	if err := json.Unmarshal([]byte(lines), &o.Lines); err != nil {
		return Order{}, fmt.Errorf("order %s lines: %w", o.ID, err)
	}
	o.CreatedAt, o.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return o, nil
}

// noRows reports whether a write changed nothing (a DO NOTHING conflict, a stale version).
func noRows(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 0, err
}

func boolErr(b bool, err error) error {
	if b {
		return err
	}
	return nil
}

func (s *Store) committed() {
	if s.Committed != nil {
		s.Committed()
	}
}
