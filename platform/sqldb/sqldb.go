// Package sqldb opens the database/sql handle every BoxOffice service stores its data in,
// and applies the service's schema migrations.
//
// A PostgreSQL URL (DATABASE_URL) is the system of record in compose and Kubernetes; without
// one, each service keeps a SQLite file under the data directory, so the all-in-one mode
// needs nothing installed. Services write portable SQL with `?` placeholders and pass it
// through Rebind; where the dialects differ, a migration has one file per dialect.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver

	"boxoffice.dev/platform/clock"
)

// Dialect names the SQL engine behind a DB.
type Dialect string

// The dialects Open supports.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// SQLite connection settings; see openSQLite for why.
const (
	sqliteBusyTimeout = 5 * time.Second
	sqliteMaxConns    = 4
)

// Options says which database to open.
type Options struct {
	// URL is DATABASE_URL: postgres:// or postgresql:// opens PostgreSQL through pgx;
	// "" opens the SQLite file DataDir/<Service>.db. Other schemes are an error.
	URL string
	// Service names the SQLite file; required when URL is "".
	Service string
	// DataDir holds SQLite files; "" means the current directory. Created if missing.
	DataDir string
	// Wait is how long Open keeps trying a PostgreSQL server that does not answer, pausing
	// between attempts (a quarter second, doubling up to 4s). 0 means one attempt. A server
	// that answers with a refusal (a wrong password, no such database) ends the wait at once.
	Wait time.Duration
	// Log gets a line for each attempt that failed and is tried again; nil logs nothing.
	Log *slog.Logger
}

// StartWait is the Wait a process gives its database at start. A PostgreSQL started beside
// the services (compose, a fresh cluster) answers seconds after them, and longer on its first
// start, which creates the databases before it listens on TCP; a wrong address still fails
// the start within a minute.
const StartWait = 30 * time.Second

// The pauses between attempts to reach PostgreSQL: the first, and the most any grows to.
const (
	firstPause = 250 * time.Millisecond
	maxPause   = 4 * time.Second
)

// DB is a connection pool and the dialect it speaks. It is safe for concurrent use,
// as *sql.DB is.
type DB struct {
	*sql.DB
	Dialect Dialect
}

// Open opens and pings the database opts names, trying PostgreSQL again for up to opts.Wait.
func Open(ctx context.Context, opts Options) (*DB, error) {
	var (
		db  *DB
		err error
	)
	switch {
	case opts.URL == "":
		db, err = openSQLite(opts)
	case strings.HasPrefix(opts.URL, "postgres://"), strings.HasPrefix(opts.URL, "postgresql://"):
		db, err = openPostgres(opts.URL)
	default:
		scheme, _, _ := strings.Cut(opts.URL, ":")
		return nil, fmt.Errorf("open database: unsupported url scheme %q (want postgres:// or none for SQLite)", scheme)
	}
	if err != nil {
		return nil, err
	}
	if err := ping(ctx, db, opts); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// ping pings db once, or for PostgreSQL until it answers, for up to opts.Wait. The pause
// between attempts doubles and has no jitter: a database's clients are a few processes, not a
// crowd whose retries must be spread.
func ping(ctx context.Context, db *DB, opts Options) error {
	if db.Dialect == SQLite {
		return pingSQLite(ctx, db)
	}
	if opts.Wait <= 0 {
		if err := db.PingContext(ctx); err != nil {
			return fmt.Errorf("ping %s database: %w", db.Dialect, err)
		}
		return nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, opts.Wait)
	defer cancel()
	var last error // of the last attempt the deadline did not cut short: the one that says why
	pause := firstPause
	for attempt := 1; ; attempt++ {
		err := db.PingContext(waitCtx)
		if err == nil {
			return nil
		}
		if refused(err) {
			return fmt.Errorf("ping postgres database: %w", err)
		}
		if waitCtx.Err() == nil || last == nil {
			last = err
		}
		if waitCtx.Err() == nil && opts.Log != nil {
			opts.Log.WarnContext(ctx, "database not reachable yet, trying again",
				"attempt", attempt, "pause", pause, "error", err)
		}
		if clock.Sleep(waitCtx, pause) != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("ping postgres database: %w", ctx.Err())
			}
			return fmt.Errorf("ping postgres database: not reachable within %v (%d attempts): %w", opts.Wait, attempt, last)
		}
		pause = min(2*pause, maxPause)
	}
}

// refused reports whether err is the PostgreSQL server's answer, which trying again will not
// change (a wrong password, no such database), rather than no answer at all. A server that is
// starting up, shutting down or out of connections answers too, but will let us in later.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "57P01", "57P02", "57P03", "53300": // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
		return false
	}
	return true
}

// openSQLite opens DataDir/<Service>.db in WAL mode, with foreign keys and a busy timeout.
// Every transaction begins IMMEDIATE, taking the single write lock at BEGIN: a deferred one
// that reads then writes can fail with SQLITE_BUSY at the upgrade, which no timeout helps.
// The pool is small, since more connections add only waiters, but above one, so reads run
// beside the writer and code that queries while holding a transaction or iterating rows does
// not deadlock on itself (on SQLite only, where PostgreSQL test runs would never show it).
func openSQLite(opts Options) (*DB, error) {
	if opts.Service == "" {
		return nil, errors.New("open sqlite: service name is required for the file name")
	}
	dir := opts.DataDir
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(sqliteBusyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "NORMAL") // durable in WAL mode except for the last commits on power loss
	q.Set("_txlock", "immediate")
	path := filepath.Join(dir, opts.Service+".db")
	sqlDB, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	sqlDB.SetMaxOpenConns(sqliteMaxConns)
	sqlDB.SetMaxIdleConns(sqliteMaxConns) // pragmas are per connection: keep them, not reopen
	return &DB{DB: sqlDB, Dialect: SQLite}, nil
}

// pingSQLite pings a SQLite file, trying again while it is busy. The first connection sets
// the file's pragmas, and switching it to WAL can meet SQLITE_BUSY without the busy timeout's
// wait when another process opens the same file at the same moment: two instances of a
// service starting together in the all-in-one mode.
func pingSQLite(ctx context.Context, db *DB) error {
	ctx, cancel := context.WithTimeout(ctx, sqliteBusyTimeout)
	defer cancel()
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		if !Retryable(err) || clock.Sleep(ctx, 20*time.Millisecond) != nil {
			return fmt.Errorf("ping sqlite database: %w", err)
		}
	}
}

// openPostgres opens a pgx-backed pool. Limits keep N replicas × M pools within the
// server's max_connections (100 by default); idle connections are released after a while
// so a quiet service does not hold them.
func openPostgres(rawURL string) (*DB, error) {
	sqlDB, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	sqlDB.SetMaxOpenConns(10)
	sqlDB.SetMaxIdleConns(5)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	return &DB{DB: sqlDB, Dialect: Postgres}, nil
}
