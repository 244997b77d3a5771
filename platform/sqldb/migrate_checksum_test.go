package sqldb_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// A migration edited after it was applied fails Migrate, naming the file, instead of being
// skipped: databases migrated before and after the edit would differ without a word.
func TestMigrateRefusesAnEditedMigration(t *testing.T) {
	tests := []struct {
		name    string
		file    func(d sqldb.Dialect) string
		wantErr bool
	}{
		{name: "shared file", file: func(sqldb.Dialect) string { return "001_venues.sql" }, wantErr: true},
		{name: "this dialect's file", file: func(d sqldb.Dialect) string { return "002_engine." + string(d) + ".sql" }, wantErr: true},
		{name: "the other dialect's file", file: func(d sqldb.Dialect) string {
			if d == sqldb.Postgres {
				return "002_engine.sqlite.sql"
			}
			return "002_engine.postgres.sql"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.ForEachDB(t, "migrate-edited", func(t *testing.T, db *sqldb.DB) {
				ctx := timeout(t)
				if err := db.Migrate(ctx, schema()); err != nil {
					t.Fatalf("Migrate: %v", err)
				}
				edited := schema()
				name := tt.file(db.Dialect)
				edited[name] = file(string(edited[name].Data) + "\nCREATE TABLE added_later (id INTEGER);")
				err := db.Migrate(ctx, edited)
				switch {
				case tt.wantErr && (err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "edited after it was applied")):
					t.Errorf("Migrate(%s edited) = %v, want an error naming it as edited", name, err)
				case !tt.wantErr && err != nil:
					t.Errorf("Migrate(%s edited) = %v, want nil: that file is not this database's", name, err)
				}
				if _, err := db.ExecContext(ctx, `SELECT count(*) FROM added_later`); err == nil {
					t.Error("the edited migration ran again, want it left alone")
				}
			})
		})
	}
}

// A database migrated by a build that recorded no checksums gets them on the next Migrate,
// from the files as they are then, and is checked from there on.
func TestMigrateBackfillsChecksums(t *testing.T) {
	testkit.ForEachDB(t, "migrate-backfill", func(t *testing.T, db *sqldb.DB) {
		ctx := timeout(t)
		// schema_migrations as older builds created and filled it, version 1 applied.
		older := []string{
			`CREATE TABLE schema_migrations (
				version    BIGINT PRIMARY KEY,
				name       TEXT NOT NULL,
				applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
			)`,
			string(schema()["001_venues.sql"].Data),
			`INSERT INTO schema_migrations (version, name) VALUES (1, 'venues')`,
		}
		for _, q := range older {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("set up an older build's database: %v", err)
			}
		}
		if err := db.Migrate(ctx, schema()); err != nil {
			t.Fatalf("Migrate over an older build's schema_migrations: %v", err)
		}
		want := map[int64]string{1: "001_venues.sql", 2: "002_engine." + string(db.Dialect) + ".sql"}
		for version, name := range want {
			var got string
			if err := db.QueryRowContext(ctx, db.Rebind(`SELECT checksum FROM schema_migrations WHERE version = ?`), version).Scan(&got); err != nil {
				t.Fatalf("read checksum of version %d: %v", version, err)
			}
			sum := sha256.Sum256(schema()[name].Data)
			if w := hex.EncodeToString(sum[:]); got != w {
				t.Errorf("checksum of version %d = %q, want SHA-256 of %s %q", version, got, name, w)
			}
		}
		edited := schema()
		edited["001_venues.sql"] = file(string(edited["001_venues.sql"].Data) + "\n-- edited")
		if err := db.Migrate(ctx, edited); err == nil || !strings.Contains(err.Error(), "001_venues.sql") {
			t.Errorf("Migrate(001 edited after the backfill) = %v, want an error naming 001_venues.sql", err)
		}
	})
}
