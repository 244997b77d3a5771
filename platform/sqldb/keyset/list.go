package keyset

import (
	"cmp"
	"context"

	"boxoffice.dev/platform/sqldb"
)

// The page sizes of a List that names none: what most lists of the system use.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// List is one list a store serves in keyset pages, declared once beside the store:
//
//	var newestFirst = keyset.List[Order]{
//		Select: `SELECT ` + orderColumns + ` FROM orders`,
//		Order:  keyset.Order{Key: "created_us", Desc: true},
//		Scan:   scanOrder,
//		Cursor: func(o Order) keyset.Cursor { … },
//	}
//
// and read with Page. Default and Max may be zero; the other fields are required.
type List[T any] struct {
	// Select is the query up to its WHERE clause: "SELECT <columns> FROM <table>".
	Select string
	// Order is the order of the pages.
	Order Order
	// Default is a page's size when a request names none, Max the largest a request may ask;
	// 0 means DefaultPageSize and MaxPageSize.
	Default, Max int
	// Scan reads a row; Cursor gives the position of an item (its Order.Key and id).
	Scan   func(sqldb.Scanner) (T, error)
	Cursor func(T) Cursor
}

// Page reads, from db, the page of limit items (0 = Default) after cursor ("" = the first
// page) among the rows where filter holds (a condition with ? placeholders and its args; ""
// for every row), and the cursor of the next page, "" on the last. A bad limit or cursor is
// an Invalid problem naming it (Order.Read).
func (l List[T]) Page(ctx context.Context, db *sqldb.DB, limit int, cursor, filter string, args ...any) (items []T, next string, err error) {
	size, after, err := l.Order.Read(limit, cmp.Or(l.Default, DefaultPageSize), cmp.Or(l.Max, MaxPageSize), cursor)
	if err != nil {
		return nil, "", err
	}
	cond, condArgs := l.Order.After(after)
	if filter != "" {
		cond = filter + " AND " + cond
	}
	// One row more than the page says whether another page follows (Trim).
	args = append(append(args[:len(args):len(args)], condArgs...), size+1)
	items, err = sqldb.Query(ctx, db, db, l.Select+" WHERE "+cond+" ORDER BY "+l.Order.By()+" LIMIT ?", args, l.Scan)
	if err != nil {
		return nil, "", err
	}
	items, next = Trim(items, size, l.Cursor)
	return items, next, nil
}
