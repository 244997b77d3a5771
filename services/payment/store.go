package payment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/sqldb/keyset"
)

// Store keeps charges in SQLite or PostgreSQL. It is safe for concurrent use, and so are
// several Stores (several payment instances) on one database: every guarantee rests on the
// unique idempotency key, not on locks held in this process. Make one as &Store{DB: db};
// every other field's zero value is its default.
type Store struct {
	// DB holds the schema of Migrations. Required.
	DB *sqldb.DB
	// Clock is the clock for timestamps; the zero Clock is time.Now.
	Clock clock.Clock
	// IDs makes charge ids; nil means ids.New.
	IDs ids.Func
}

const chargeColumns = `id, idempotency_key, order_id, account, currency, amount_minor, status, decline_reason, created_us, updated_us`

// Charge records req's charge once per idempotency key and returns it. A later call with the
// same key returns the first charge (created false); with another order, account or amount
// it is Unprocessable, naming idempotency_key. A voided key returns the voided record,
// whatever the request: it takes nothing. Of concurrent calls with one key exactly one
// writes (docs/architecture.md, "Idempotency keys").
func (s *Store) Charge(ctx context.Context, req ChargeRequest) (c Charge, created bool, err error) {
	if err := req.Validate(); err != nil {
		return Charge{}, false, err
	}
	now := s.Clock.Now().UTC()
	status, reason := Decide(req)
	c = Charge{
		ID: s.IDs.New("ch_"), IdempotencyKey: req.IdempotencyKey, OrderID: req.OrderID, Account: req.Account,
		Amount: req.Amount, Status: status, DeclineReason: reason, CreatedAt: now, UpdatedAt: now,
	}
	err = s.DB.InTx(ctx, func(tx *sql.Tx) error {
		created, err = s.insert(ctx, tx, c)
		if err != nil || created {
			return err
		}
		if c, err = s.get(ctx, tx, "idempotency_key", req.IdempotencyKey); err != nil {
			return err
		}
		if c.Status != Voided && !req.Matches(c) {
			return &problem.Error{Code: problem.Unprocessable, Field: "idempotency_key",
				Message: "this key was used for another order, account or amount"}
		}
		return nil
	})
	if err != nil {
		return Charge{}, false, fmt.Errorf("charge: %w", err)
	}
	return c, created, nil
}

// Refund refunds the charge req names and returns it (see Charge.Refund: idempotent). A key
// that was never charged is voided: a voided row takes the key, so a charge still in flight
// for it finds the row and takes nothing. An unknown charge id is NotFound.
func (s *Store) Refund(ctx context.Context, req RefundRequest) (Charge, error) {
	if err := req.Validate(); err != nil {
		return Charge{}, err
	}
	var c Charge
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		now := s.Clock.Now().UTC()
		column, value := "id", req.ChargeID
		if req.IdempotencyKey != "" {
			column, value = "idempotency_key", req.IdempotencyKey
			void := Charge{ID: s.IDs.New("ch_"), IdempotencyKey: value, OrderID: req.OrderID, Status: Voided,
				DeclineReason: req.Reason, CreatedAt: now, UpdatedAt: now}
			voided, err := s.insert(ctx, tx, void)
			if err != nil || voided {
				c = void
				return err
			}
		}
		found, err := s.get(ctx, tx, column, value)
		if err != nil {
			return err
		}
		c = found.Refund(now)
		if c.Status == found.Status {
			return nil
		}
		_, err = tx.ExecContext(ctx, s.DB.Rebind(`UPDATE charges SET status = ?, updated_us = ? WHERE id = ? AND status = ?`),
			c.Status, c.UpdatedAt.UnixMicro(), c.ID, found.Status)
		return err
	})
	if err != nil {
		return Charge{}, fmt.Errorf("refund: %w", err)
	}
	return c, nil
}

// Get returns the charge with id, or the one with idempotency key when id is "".
func (s *Store) Get(ctx context.Context, id, key string) (Charge, error) {
	column, value := "id", id
	if id == "" {
		column, value = "idempotency_key", key
	}
	if value == "" {
		return Charge{}, problem.InvalidField("charge_id", "want charge_id or idempotency_key")
	}
	c, err := s.get(ctx, s.DB, column, value)
	if err != nil {
		return Charge{}, fmt.Errorf("get charge: %w", err)
	}
	return c, nil
}

// Page is one page of a list; Next is the cursor of the following page, "" on the last.
type Page struct {
	Charges []Charge `json:"charges"`
	Next    string   `json:"next_cursor,omitempty"`
}

// oldestFirst is the list List pages through.
var oldestFirst = keyset.List[Charge]{
	Select:  `SELECT ` + chargeColumns + ` FROM charges`,
	Order:   keyset.Order{Key: "created_us"},
	Default: DefaultPageSize,
	Max:     MaxPageSize,
	Scan:    scanCharge,
	Cursor:  func(c Charge) keyset.Cursor { return keyset.Cursor{Key: c.CreatedAt.UnixMicro(), ID: c.ID} },
}

// List returns charges oldest first, only those of orderID when it is not "", limit at a
// time (0 = DefaultPageSize, at most MaxPageSize) from cursor ("" = the first page).
func (s *Store) List(ctx context.Context, orderID string, limit int, cursor string) (Page, error) {
	var filter string
	var args []any
	if orderID != "" {
		filter, args = "order_id = ?", []any{orderID}
	}
	charges, next, err := oldestFirst.Page(ctx, s.DB, limit, cursor, filter, args...)
	if err != nil {
		return Page{}, fmt.Errorf("list charges: %w", err)
	}
	return Page{Charges: charges, Next: next}, nil
}

// insert writes c unless its idempotency key is taken, and reports whether it did.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, c Charge) (bool, error) {
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO charges (`+chargeColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`),
		c.ID, c.IdempotencyKey, c.OrderID, c.Account, c.Amount.Currency, c.Amount.Minor, c.Status,
		c.DeclineReason, c.CreatedAt.UnixMicro(), c.UpdatedAt.UnixMicro())
	if err != nil {
		return false, fmt.Errorf("insert charge: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("insert charge: %w", err)
	}
	return n == 1, nil
}

// querier is what get needs from a *sql.DB or *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// get reads the charge whose column (id or idempotency_key, never user input) equals value.
func (s *Store) get(ctx context.Context, q querier, column, value string) (Charge, error) {
	row := q.QueryRowContext(ctx, s.DB.Rebind(`SELECT `+chargeColumns+` FROM charges WHERE `+column+` = ?`), value)
	c, err := scanCharge(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Charge{}, &problem.Error{Code: problem.NotFound, Message: "no such charge", Err: err}
	}
	return c, err
}

func scanCharge(row sqldb.Scanner) (Charge, error) {
	var c Charge
	var created, updated int64
	err := row.Scan(&c.ID, &c.IdempotencyKey, &c.OrderID, &c.Account, &c.Amount.Currency, &c.Amount.Minor,
		&c.Status, &c.DeclineReason, &created, &updated)
	c.CreatedAt, c.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return c, err
}
