package outbox_test

import (
	"testing"
	"time"

	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// firstTable is the outbox table as the first version of EnsureTable created it, before the
// relay could set rows aside.
var firstTable = map[sqldb.Dialect]string{
	sqldb.SQLite: `CREATE TABLE outbox (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT    NOT NULL UNIQUE,
	subject      TEXT    NOT NULL,
	payload      BLOB    NOT NULL,
	headers      TEXT    NOT NULL,
	created_at   BIGINT  NOT NULL,
	published_at BIGINT
)`,
	sqldb.Postgres: `CREATE TABLE outbox (
	seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id           TEXT   NOT NULL UNIQUE,
	subject      TEXT   NOT NULL,
	payload      BYTEA  NOT NULL,
	headers      TEXT   NOT NULL,
	created_at   BIGINT NOT NULL,
	published_at BIGINT
)`,
}

// EnsureTable adds the columns of set-aside rows to a table an older build created, keeping
// its rows, and the relay then publishes what that build left pending.
func TestEnsureTableUpgradesAnOlderTable(t *testing.T) {
	testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		if _, err := db.ExecContext(ctx, firstTable[db.Dialect]); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO outbox (id, subject, payload, headers, created_at) VALUES (?, ?, ?, ?, ?)`),
			"left-pending", "boxoffice.test.thing.created", []byte(`{}`), `{}`, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
		js, s := setup(t, db) // EnsureTable twice over the older table
		if failedAt, failure := setAside(t, db, "left-pending"); failedAt.Valid || failure.Valid {
			t.Errorf("upgraded row: failed_at %v, failure %v; want both NULL", failedAt, failure)
		}
		run(t, &outbox.Relay{DB: db, JS: js, Interval: 10 * time.Millisecond})
		testkit.Eventually(t, 5*time.Second, "the older build's row published", func() bool { return pending(t, db) == 0 && msgCount(t, s) == 1 })
	})
}
