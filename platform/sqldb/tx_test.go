package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"testing/fstest"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// pgError and sqliteError stand for the drivers' errors, which Retryable matches by method.
type pgError struct{ state string }

func (e pgError) Error() string    { return "pg " + e.state }
func (e pgError) SQLState() string { return e.state }

type sqliteError struct{ code int }

func (e sqliteError) Error() string { return fmt.Sprint("sqlite ", e.code) }
func (e sqliteError) Code() int     { return e.code }

func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"postgres serialization failure", pgError{"40001"}, true},
		{"postgres deadlock", pgError{"40P01"}, true},
		{"postgres unique violation", pgError{"23505"}, false},
		{"sqlite busy", sqliteError{5}, true},
		{"sqlite locked", sqliteError{6}, true},
		{"sqlite busy snapshot, an extended code", sqliteError{5 | 2<<8}, true},
		{"sqlite constraint", sqliteError{19}, false},
		{"wrapped", fmt.Errorf("place hold: %w", pgError{"40001"}), true},
		{"joined", errors.Join(errors.New("commit"), sqliteError{5}), true},
		{"an answer, not a conflict", problem.New(problem.Conflict, "seat taken"), false},
		{"another error", errors.New("disk full"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sqldb.Retryable(tt.err); got != tt.want {
				t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestInTx(t *testing.T) {
	testkit.ForEachDB(t, "tx", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, `CREATE TABLE seats (id TEXT PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		insert := func(id string) func(tx *sql.Tx) error {
			return func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, db.Rebind(`INSERT INTO seats (id) VALUES (?)`), id)
				return err
			}
		}
		count := func(id string) int {
			var n int
			if err := db.QueryRowContext(ctx, db.Rebind(`SELECT count(*) FROM seats WHERE id = ?`), id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		refused := errors.New("seat taken")

		tests := []struct {
			name     string
			failures []error // what fn returns after its insert, one run after another; then nil
			want     error   // what InTx returns, matched with errors.Is
			runs     int
			stored   int
		}{
			{"commits", nil, nil, 1, 1},
			{"rolls back and returns fn's error", []error{refused}, refused, 1, 0},
			{"runs again after transient conflicts", []error{pgError{"40001"}, sqliteError{5}}, nil, 3, 1},
			{"gives up after five conflicts", []error{sqliteError{5}, sqliteError{5}, sqliteError{5}, sqliteError{5}, sqliteError{5}, sqliteError{5}}, sqliteError{5}, 5, 0},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				id, runs := fmt.Sprint("A-", i), 0
				err := db.InTx(ctx, func(tx *sql.Tx) error {
					runs++
					if err := insert(id)(tx); err != nil {
						return err
					}
					if runs <= len(tt.failures) {
						return tt.failures[runs-1]
					}
					return nil
				})
				if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
					t.Errorf("InTx = %v, want %v", err, tt.want)
				}
				if runs != tt.runs || count(id) != tt.stored {
					t.Errorf("InTx ran fn %d times and stored %d rows, want %d and %d", runs, count(id), tt.runs, tt.stored)
				}
			})
		}

		t.Run("a cancelled context ends the retries", func(t *testing.T) {
			ctx, cancel := context.WithCancel(ctx)
			runs := 0
			err := db.InTx(ctx, func(tx *sql.Tx) error {
				runs++
				cancel()
				return pgError{"40P01"}
			})
			if runs != 1 || !errors.Is(err, pgError{"40P01"}) {
				t.Errorf("InTx with ctx cancelled during a conflict ran %d times = %v, want once with the conflict", runs, err)
			}
		})
	})
}

func TestDir(t *testing.T) {
	files := fstest.MapFS{"migrations/001_seats.sql": file(`CREATE TABLE seats (id TEXT PRIMARY KEY);`)}
	db := testkit.OpenDBs(t, "dir")[0]
	ctx := context.Background()
	if err := db.Migrate(ctx, sqldb.Dir(files, "migrations")); err != nil {
		t.Fatalf("Migrate(Dir(files, migrations)) = %v, want nil", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO seats (id) VALUES ('A-1')`); err != nil {
		t.Errorf("insert after migrating from Dir: %v", err)
	}
	if err := db.Migrate(ctx, sqldb.Dir(files, "../migrations")); err == nil {
		t.Error("Migrate(Dir(files, ../migrations)) = nil, want the invalid directory reported")
	}
}
