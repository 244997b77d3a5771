package sqldb

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
)

// Migration files are named NNN_name.sql (one SQL for both dialects) or, where the dialects
// differ, NNN_name.sqlite.sql and NNN_name.postgres.sql, both required so that schemas cannot
// drift apart by omission. NNN is the version, applied in order, each in a transaction of
// Migrate's (no BEGIN/COMMIT in the file).
var migrationName = regexp.MustCompile(`^(\d+)_([A-Za-z0-9_]+?)(?:\.(sqlite|postgres))?\.sql$`)

// Dir returns directory dir of fsys (a service's `//go:embed migrations/*.sql`) as the root
// Migrate reads. An invalid dir is reported by Migrate, not here, so a package can declare
// its migrations as a plain function (see services/order/migrations.go).
func Dir(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return brokenFS{err}
	}
	return sub
}

// brokenFS fails every Open with the error Dir met.
type brokenFS struct{ err error }

func (b brokenFS) Open(string) (fs.File, error) { return nil, b.err }

// migrationLockKey is the PostgreSQL advisory lock that serialises migrations of one
// database; any constant works as long as every BoxOffice process uses the same one.
const migrationLockKey = 0x626f786f6666 // "boxoff"

// schema_migrations records each applied version with the SHA-256 of the file applied, so
// that a file edited afterwards is caught rather than skipped: the databases migrated before
// the edit and those created after it would otherwise differ, and nothing would say so. A
// table created by an older build has no checksum column; Migrate adds it.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
	checksum   TEXT
)`

// hasChecksumColumn counts schema_migrations' checksum column, per dialect.
var hasChecksumColumn = map[Dialect]string{
	SQLite: `SELECT count(*) FROM pragma_table_info('schema_migrations') WHERE name = 'checksum'`,
	Postgres: `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name = 'checksum'`,
}

// migration is one version's SQL for the DB's dialect.
type migration struct {
	version int64
	name    string
	file    string
}

// Migrate applies the migrations in fsys the database has not recorded yet, in version
// order, each in one transaction with its row in schema_migrations. It fails, naming the
// file, when an applied version's checksum changed: a schema change is a new version (rows
// from before checksums take the file's as it is now). Instances starting at once serialise
// on a PostgreSQL advisory lock or SQLite's write lock, and a later one skips what is
// recorded; on SQLite a waiter gives up after the busy timeout.
func (db *DB) Migrate(ctx context.Context, fsys fs.FS) error {
	migrations, err := readMigrations(fsys, db.Dialect)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := db.tryTx(ctx, func(tx *sql.Tx) error { return db.setUpMigrations(ctx, tx) }); err != nil {
		return fmt.Errorf("migrate: schema_migrations: %w", err)
	}
	for _, m := range migrations {
		body, err := fs.ReadFile(fsys, m.file)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if err := db.tryTx(ctx, func(tx *sql.Tx) error { return db.apply(ctx, tx, m, body) }); err != nil {
			return fmt.Errorf("migrate %s: %w", m.file, err)
		}
	}
	return nil
}

// setUpMigrations creates schema_migrations, or adds the checksum column a table created by
// an older build lacks.
func (db *DB) setUpMigrations(ctx context.Context, tx *sql.Tx) error {
	if err := db.lockMigrations(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, hasChecksumColumn[db.Dialect]).Scan(&n); err != nil {
		return fmt.Errorf("find checksum column: %w", err)
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE schema_migrations ADD COLUMN checksum TEXT`); err != nil {
			return fmt.Errorf("add checksum column: %w", err)
		}
	}
	return nil
}

// apply applies m, whose file holds body, unless its version is recorded: then it checks
// the recorded checksum, or records it when the row has none.
func (db *DB) apply(ctx context.Context, tx *sql.Tx, m migration, body []byte) error {
	if err := db.lockMigrations(ctx, tx); err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	checksum := hex.EncodeToString(sum[:])
	var recorded sql.NullString
	err := tx.QueryRowContext(ctx, db.Rebind(`SELECT checksum FROM schema_migrations WHERE version = ?`), m.version).Scan(&recorded)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("check version: %w", err)
	case !recorded.Valid:
		if _, err := tx.ExecContext(ctx, db.Rebind(`UPDATE schema_migrations SET checksum = ? WHERE version = ?`), checksum, m.version); err != nil {
			return fmt.Errorf("record checksum: %w", err)
		}
		return nil
	case recorded.String != checksum:
		return fmt.Errorf("edited after it was applied (checksum %.12s…, recorded %.12s…): restore it and put the change in a new version", checksum, recorded.String)
	default:
		return nil
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, db.Rebind(`INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)`), m.version, m.name, checksum); err != nil {
		return fmt.Errorf("record version: %w", err)
	}
	return nil
}

// lockMigrations serialises migrators on PostgreSQL until tx ends (on SQLite, tx's
// IMMEDIATE begin already has).
func (db *DB) lockMigrations(ctx context.Context, tx *sql.Tx) error {
	if db.Dialect != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// readMigrations lists the migrations of fsys for dialect d, in version order.
func readMigrations(fsys fs.FS, d Dialect) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	type files struct{ shared, sqlite, postgres string }
	byVersion := map[int64]*files{}
	names := map[int64]string{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		parts := migrationName.FindStringSubmatch(e.Name())
		if parts == nil {
			return nil, fmt.Errorf("%s: want NNN_name.sql, NNN_name.sqlite.sql or NNN_name.postgres.sql", e.Name())
		}
		version, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: version: %w", e.Name(), err)
		}
		if prev, ok := names[version]; ok && prev != parts[2] {
			return nil, fmt.Errorf("version %d has two names: %s and %s", version, prev, parts[2])
		}
		names[version] = parts[2]
		f := byVersion[version]
		if f == nil {
			f = &files{}
			byVersion[version] = f
		}
		slot := &f.shared
		switch parts[3] {
		case "sqlite":
			slot = &f.sqlite
		case "postgres":
			slot = &f.postgres
		}
		if *slot != "" {
			return nil, fmt.Errorf("version %d: %s and %s", version, *slot, e.Name())
		}
		*slot = e.Name()
	}

	var out []migration
	for version, f := range byVersion {
		perDialect := f.sqlite != "" || f.postgres != ""
		switch {
		case f.shared != "" && perDialect:
			return nil, fmt.Errorf("version %d: %s beside a per-dialect file; use one or the other", version, f.shared)
		case perDialect && (f.sqlite == "" || f.postgres == ""):
			return nil, fmt.Errorf("version %d: a per-dialect version needs both a .sqlite.sql and a .postgres.sql file", version)
		}
		file := f.shared
		switch {
		case file != "":
		case d == Postgres:
			file = f.postgres
		default:
			file = f.sqlite
		}
		out = append(out, migration{version: version, name: names[version], file: file})
	}
	slices.SortFunc(out, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	return out, nil
}
