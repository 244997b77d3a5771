package sqldb_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// schema is a small migration set. 001 has no IF NOT EXISTS: applying it twice fails, so a
// passing second Migrate proves it was skipped.
func schema() fstest.MapFS {
	return fstest.MapFS{
		"001_venues.sql": file(`
CREATE TABLE venues (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE seats (
	id       INTEGER PRIMARY KEY,
	venue_id INTEGER NOT NULL REFERENCES venues (id),
	label    TEXT NOT NULL
);`),
		"002_engine.sqlite.sql":   file(`CREATE TABLE engine (name TEXT); INSERT INTO engine VALUES ('sqlite');`),
		"002_engine.postgres.sql": file(`CREATE TABLE engine (name TEXT); INSERT INTO engine VALUES ('postgres');`),
	}
}

func timeout(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func versions(t *testing.T, ctx context.Context, db *sqldb.DB) []int64 {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("scan version: %v", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	return out
}

func sameVersions(got, want []int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	testkit.ForEachDB(t, "migrate-twice", func(t *testing.T, db *sqldb.DB) {
		ctx := timeout(t)
		for i := range 2 {
			if err := db.Migrate(ctx, schema()); err != nil {
				t.Fatalf("Migrate #%d: %v", i+1, err)
			}
		}
		if got, want := versions(t, ctx, db), []int64{1, 2}; !sameVersions(got, want) {
			t.Errorf("schema_migrations versions = %v, want %v", got, want)
		}
		var engine string
		if err := db.QueryRowContext(ctx, `SELECT name FROM engine`).Scan(&engine); err != nil {
			t.Fatalf("read engine: %v", err)
		}
		if engine != string(db.Dialect) {
			t.Errorf("per-dialect migration applied = %q, want %q", engine, db.Dialect)
		}

		// A later release adds a version: only that one runs.
		next := schema()
		next["003_sold.sql"] = file(`ALTER TABLE seats ADD COLUMN sold BOOLEAN NOT NULL DEFAULT FALSE;`)
		if err := db.Migrate(ctx, next); err != nil {
			t.Fatalf("Migrate with 003: %v", err)
		}
		if got, want := versions(t, ctx, db), []int64{1, 2, 3}; !sameVersions(got, want) {
			t.Errorf("schema_migrations versions after 003 = %v, want %v", got, want)
		}
	})
}

func TestMigrateConcurrently(t *testing.T) {
	testkit.ForEachDB(t, "migrate-concurrent", func(t *testing.T, db *sqldb.DB) {
		ctx := timeout(t)
		const instances = 4
		errs := make([]error, instances)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range instances {
			wg.Go(func() {
				<-start
				errs[i] = db.Migrate(ctx, schema())
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("Migrate in instance %d: %v", i, err)
			}
		}
		if got, want := versions(t, ctx, db), []int64{1, 2}; !sameVersions(got, want) {
			t.Errorf("schema_migrations versions = %v, want %v", got, want)
		}
		var engines int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM engine`).Scan(&engines); err != nil {
			t.Fatalf("count engine rows: %v", err)
		}
		if engines != 1 {
			t.Errorf("engine rows = %d, want 1 (version 2 applied once)", engines)
		}
	})
}

func TestFailedMigrationLeavesNoTrace(t *testing.T) {
	testkit.ForEachDB(t, "migrate-fail", func(t *testing.T, db *sqldb.DB) {
		ctx := timeout(t)
		broken := fstest.MapFS{
			"001_ok.sql":     file(`CREATE TABLE ok (id INTEGER);`),
			"002_broken.sql": file(`CREATE TABLE half (id INTEGER); INSERT INTO missing_table VALUES (1);`),
		}
		err := db.Migrate(ctx, broken)
		if err == nil || !strings.Contains(err.Error(), "002_broken.sql") {
			t.Fatalf("Migrate(broken) error = %v, want one naming 002_broken.sql", err)
		}
		if got, want := versions(t, ctx, db), []int64{1}; !sameVersions(got, want) {
			t.Errorf("schema_migrations versions = %v, want %v", got, want)
		}
		if _, err := db.ExecContext(ctx, `SELECT count(*) FROM half`); err == nil {
			t.Errorf("table from the failed migration exists, want it rolled back")
		}
	})
}

func TestRoundTripWithRebind(t *testing.T) {
	testkit.ForEachDB(t, "rebind", func(t *testing.T, db *sqldb.DB) {
		ctx := timeout(t)
		if err := db.Migrate(ctx, schema()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO venues (id, name) VALUES (?, ?)`), 1, "Hall ?"); err != nil {
			t.Fatalf("insert venue: %v", err)
		}
		for i, label := range []string{"A1", "A2", "B1"} {
			if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO seats (id, venue_id, label) VALUES (?, ?, ?)`), i+1, 1, label); err != nil {
				t.Fatalf("insert seat %s: %v", label, err)
			}
		}
		var name string
		var count int
		q := db.Rebind(`SELECT v.name, count(*) FROM venues v JOIN seats s ON s.venue_id = v.id
			WHERE v.id = ? AND s.label LIKE ? AND v.name <> 'literal ?' GROUP BY v.name`)
		if err := db.QueryRowContext(ctx, q, 1, "A%").Scan(&name, &count); err != nil {
			t.Fatalf("select: %v", err)
		}
		if name != "Hall ?" || count != 2 {
			t.Errorf("select = (%q, %d), want (%q, %d)", name, count, "Hall ?", 2)
		}
	})
}

func TestForeignKeysEnforced(t *testing.T) {
	testkit.ForEachDB(t, "foreign-keys", func(t *testing.T, db *sqldb.DB) {
		ctx := timeout(t)
		if err := db.Migrate(ctx, schema()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		_, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO seats (id, venue_id, label) VALUES (?, ?, ?)`), 1, 999, "Z9")
		if err == nil {
			t.Errorf("insert a seat of a missing venue succeeded, want a foreign key error")
		}
	})
}

func TestSQLiteSettings(t *testing.T) {
	ctx := timeout(t)
	db, err := sqldb.Open(ctx, sqldb.Options{Service: "settings", DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	tests := []struct {
		pragma string
		want   string
	}{
		{pragma: "journal_mode", want: "wal"},
		{pragma: "foreign_keys", want: "1"},
		{pragma: "busy_timeout", want: "5000"},
	}
	for _, tt := range tests {
		t.Run(tt.pragma, func(t *testing.T) {
			var got string
			if err := db.QueryRowContext(ctx, "PRAGMA "+tt.pragma).Scan(&got); err != nil {
				t.Fatalf("PRAGMA %s: %v", tt.pragma, err)
			}
			if got != tt.want {
				t.Errorf("PRAGMA %s = %q, want %q", tt.pragma, got, tt.want)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    sqldb.Options
		wantErr string
	}{
		{name: "unsupported scheme", opts: sqldb.Options{URL: "mysql://root@localhost/db"}, wantErr: `"mysql"`},
		{name: "sqlite without a service", opts: sqldb.Options{DataDir: t.TempDir()}, wantErr: "service name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sqldb.Open(context.Background(), tt.opts)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%+v) succeeded, want an error containing %q", tt.opts, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Open(%+v) error = %v, want one containing %q", tt.opts, err, tt.wantErr)
			}
		})
	}
}
