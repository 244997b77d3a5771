package testkit

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/sqldb"
)

// PostgresEnv names the environment variable holding an admin URL of a PostgreSQL server
// for tests, e.g. postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable.
const PostgresEnv = "BOXOFFICE_TEST_POSTGRES"

// OpenDBs opens the databases a store test runs against: always a SQLite file in a
// temporary directory, and a fresh PostgreSQL database when PostgresEnv is set. Without
// PostgresEnv the test runs on SQLite alone locally and fails in CI.
//
// Each PostgreSQL database is created for this call with a unique name and dropped when the
// test ends, so tests never see each other's rows and may run in parallel.
func OpenDBs(t testing.TB, service string) []*sqldb.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lite, err := sqldb.Open(ctx, sqldb.Options{Service: service, DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = lite.Close() })
	dbs := []*sqldb.DB{lite}

	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		if os.Getenv("CI") != "" {
			Missing(t, "PostgreSQL ("+PostgresEnv+")")
		}
		return dbs
	}
	return append(dbs, openPostgres(ctx, t, admin, service))
}

// ForEachDB runs fn as one subtest per database of OpenDBs, named by its dialect.
func ForEachDB(t *testing.T, service string, fn func(t *testing.T, db *sqldb.DB)) {
	t.Helper()
	for _, db := range OpenDBs(t, service) {
		t.Run(string(db.Dialect), func(t *testing.T) { fn(t, db) })
	}
}

// ForEachDatabaseURL runs fn as one subtest per database a test of real processes runs
// against, named by its dialect: "sqlite" with url "" (each process opens the SQLite file
// of its DATA_DIR; processes given one DATA_DIR share it), and "postgres" with the URL of a fresh database, dropped when the
// test ends, when PostgresEnv is set. As with OpenDBs, PostgreSQL is skipped locally without
// PostgresEnv and missing in CI.
func ForEachDatabaseURL(t *testing.T, service string, fn func(t *testing.T, url string)) {
	t.Helper()
	t.Run(string(sqldb.SQLite), func(t *testing.T) { fn(t, "") })
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		if os.Getenv("CI") != "" {
			Missing(t, "PostgreSQL ("+PostgresEnv+")")
		}
		return
	}
	t.Run(string(sqldb.Postgres), func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fn(t, createPostgres(ctx, t, admin, service))
	})
}

// openPostgres creates a uniquely named database through the admin URL, opens it, and
// drops it at cleanup.
func openPostgres(ctx context.Context, t testing.TB, adminURL, service string) *sqldb.DB {
	t.Helper()
	u := createPostgres(ctx, t, adminURL, service)
	db, err := sqldb.Open(ctx, sqldb.Options{URL: u, Service: service})
	if err != nil {
		t.Fatalf("open postgres %s: %v", u, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// createPostgres creates a uniquely named database through the admin URL, returns its URL,
// and drops it at cleanup, after the cleanups registered later (the pools that use it).
func createPostgres(ctx context.Context, t testing.TB, adminURL, service string) string {
	t.Helper()
	u, err := url.Parse(adminURL)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	admin, err := sql.Open("pgx", adminURL)
	if err != nil {
		t.Fatalf("open postgres admin: %v", err)
	}
	t.Cleanup(func() { _ = admin.Close() })

	name := testDBName(service)
	// Identifiers cannot be bound parameters; name is built from [a-z0-9_] only.
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	// Registered before the users' Close, so it runs after them (cleanups run last-in
	// first-out); FORCE ends any connection a failed test or a killed process left behind.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// testDBName is test_<service>_<random>, lower-case and within PostgreSQL's 63-byte limit.
func testDBName(service string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails: it crashes the program rather than return an error
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '_'
	}, service)
	if len(clean) > 32 {
		clean = clean[:32]
	}
	return fmt.Sprintf("test_%s_%s", clean, hex.EncodeToString(b[:]))
}
