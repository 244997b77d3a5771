// Package outbox keeps a service's state changes and the events announcing them in step.
//
// Publishing an event after a commit loses it if the process dies in between; publishing
// before the commit announces a change that may still roll back. The transactional outbox
// avoids both: Add writes the event into an outbox table in the same transaction as the
// change, so both commit or neither does, and a Relay publishes committed rows to JetStream
// afterwards and marks them published.
//
// Delivery is at least once: the relay marks a row only after JetStream acknowledged it, and
// two relays over one table may both send a row. The stream drops a repeated event id
// (Nats-Msg-Id) within natsconn.DuplicateWindow; consumers stay idempotent by event id for a
// relay stalled longer than that.
//
// Events are published in the order of the outbox, except a row JetStream can never accept,
// which the relay sets aside (see Relay) rather than retry in front of every later event.
// Nothing is deleted: once the cause is fixed, replay a row by clearing its mark,
//
//	UPDATE outbox SET failed_at = NULL, failure = NULL WHERE id = '<event id>';
//
// and the relay publishes it at its next pass, after the events that followed it: a
// consumer that relies on the order of one entity's events sees this one late.
package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/sqldb"
)

// Event is one message to publish once the transaction that adds it commits.
type Event struct {
	// ID is the event's unique id; the relay sends it as Nats-Msg-Id, so it is also the
	// de-duplication key. Required.
	ID string
	// Subject is the JetStream subject, boxoffice.<service>.<entity>.<verb>. Required.
	Subject string
	// Payload is the message body, usually JSON with id, type, occurred_at and the data.
	Payload []byte
	// Time is when the change happened, kept as the row's created_at; zero means now.
	Time time.Time
}

// MaxPayload is the largest payload Add accepts, in bytes. NATS refuses a message over its
// max_payload, 1 MiB by default, headers included; half of that leaves room for the headers
// and for a server configured lower, and is far above any BoxOffice event. An event that
// large belongs in the database, announced by an event that names it.
const MaxPayload = 512 << 10

// ErrTooLarge is the error Add returns, wrapped, for a payload over MaxPayload.
var ErrTooLarge = errors.New("payload over outbox.MaxPayload")

// lockKey is the PostgreSQL advisory lock Add and EnsureTable take; see Add for why. Any
// constant works as long as every writer of one database uses the same one.
const lockKey = 0x6f7574626f78 // "outbox"

// Times are unix milliseconds in BIGINT columns: SQLite has no timestamp type, and integers
// compare and sort the same way on both dialects.
var createTable = map[sqldb.Dialect]string{
	sqldb.SQLite: `CREATE TABLE IF NOT EXISTS outbox (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT    NOT NULL UNIQUE,
	subject      TEXT    NOT NULL,
	payload      BLOB    NOT NULL,
	headers      TEXT    NOT NULL,
	created_at   BIGINT  NOT NULL,
	published_at BIGINT
)`,
	sqldb.Postgres: `CREATE TABLE IF NOT EXISTS outbox (
	seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id           TEXT   NOT NULL UNIQUE,
	subject      TEXT   NOT NULL,
	payload      BYTEA  NOT NULL,
	headers      TEXT   NOT NULL,
	created_at   BIGINT NOT NULL,
	published_at BIGINT
)`,
}

// addedColumns are the columns added since the first version of the table, in order;
// EnsureTable adds those a table created by an older build lacks. failed_at (unix ms) and
// failure mark a row the relay set aside as never publishable.
var addedColumns = []struct{ name, ddl string }{
	{"failed_at", "BIGINT"},
	{"failure", "TEXT"},
}

// hasColumn counts the outbox table's columns of a name (0 or 1), in each dialect.
var hasColumn = map[sqldb.Dialect]string{
	sqldb.SQLite:   `SELECT count(*) FROM pragma_table_info('outbox') WHERE name = ?`,
	sqldb.Postgres: `SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'outbox' AND column_name = ?`,
}

// The relay reads pending rows in seq order; the partial index holds only those, so it
// stays small however many published rows wait for pruning. The second holds the rows set
// aside, which the relay counts every minute.
const (
	createPendingIndex  = `CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (seq) WHERE published_at IS NULL`
	createSetAsideIndex = `CREATE INDEX IF NOT EXISTS outbox_set_aside ON outbox (seq) WHERE failed_at IS NOT NULL`
)

// EnsureTable creates the outbox table and its indexes if they do not exist, and adds the
// columns a table created by an older build lacks. Every instance of a service may call it
// at start: on PostgreSQL the instances take turns under an advisory lock, since concurrent
// CREATE TABLE IF NOT EXISTS can still collide there.
func EnsureTable(ctx context.Context, db *sqldb.DB) (err error) {
	ddl, ok := createTable[db.Dialect]
	if !ok {
		return fmt.Errorf("outbox: unsupported dialect %q", db.Dialect)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("outbox: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := lock(ctx, tx, db); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("outbox: create table: %w", err)
	}
	for _, c := range addedColumns {
		var n int
		if err := tx.QueryRowContext(ctx, db.Rebind(hasColumn[db.Dialect]), c.name).Scan(&n); err != nil {
			return fmt.Errorf("outbox: look for column %s: %w", c.name, err)
		}
		if n > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE outbox ADD COLUMN `+c.name+` `+c.ddl); err != nil {
			return fmt.Errorf("outbox: add column %s: %w", c.name, err)
		}
	}
	for _, stmt := range []string{createPendingIndex, createSetAsideIndex} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("outbox: create index: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("outbox: create table: %w", err)
	}
	return nil
}

// Add writes ev into the outbox within tx, with ctx's trace context in its headers; it is
// published after tx commits, never if it rolls back. A payload over MaxPayload is refused
// with ErrTooLarge before anything is written. The relay needs rows visible in seq order, so
// on PostgreSQL Add takes a transaction-scoped advisory lock, serialising a database's
// event-producing commits (SQLite has one writer anyway): call Add last, just before Commit,
// to keep that queue short.
func Add(ctx context.Context, tx *sql.Tx, db *sqldb.DB, ev Event) error {
	switch {
	case ev.ID == "":
		return errors.New("outbox: add: event id is required")
	case ev.Subject == "":
		return fmt.Errorf("outbox: add %s: subject is required", ev.ID)
	case len(ev.Payload) > MaxPayload:
		return fmt.Errorf("outbox: add %s: payload of %d bytes: %w (%d bytes)", ev.ID, len(ev.Payload), ErrTooLarge, MaxPayload)
	}
	h := nats.Header{}
	natsconn.InjectTrace(ctx, h)
	headers, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("outbox: add %s: headers: %w", ev.ID, err)
	}
	at := ev.Time
	if at.IsZero() {
		at = time.Now()
	}
	payload := ev.Payload
	if payload == nil {
		payload = []byte{} // NOT NULL: an empty body is still a body
	}
	if err := lock(ctx, tx, db); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, db.Rebind(`INSERT INTO outbox (id, subject, payload, headers, created_at) VALUES (?, ?, ?, ?, ?)`),
		ev.ID, ev.Subject, payload, string(headers), at.UnixMilli())
	if err != nil {
		return fmt.Errorf("outbox: add %s: %w", ev.ID, err)
	}
	return nil
}

// lock takes the outbox's advisory lock until tx ends, on PostgreSQL; SQLite transactions
// already hold the database's single write lock.
func lock(ctx context.Context, tx *sql.Tx, db *sqldb.DB) error {
	if db.Dialect != sqldb.Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lockKey)); err != nil {
		return fmt.Errorf("outbox: lock: %w", err)
	}
	return nil
}
