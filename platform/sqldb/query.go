package sqldb

import (
	"context"
	"database/sql"
)

// Scanner is a row being read: a *sql.Row or the current row of *sql.Rows. A store writes one
// scan function per table over it and uses it for both.
type Scanner interface{ Scan(dest ...any) error }

// Querier runs a query: a *sql.DB, *sql.Tx or *DB.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Query runs query, written with ? placeholders whatever the database (Rebind), on q (db
// itself or one of its transactions) and reads every row with scan. The result is non-nil,
// so an empty list encodes as [] in JSON.
func Query[T any](ctx context.Context, db *DB, q Querier, query string, args []any, scan func(Scanner) (T, error)) ([]T, error) {
	rows, err := q.QueryContext(ctx, db.Rebind(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
