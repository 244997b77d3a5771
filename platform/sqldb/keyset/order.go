package keyset

import (
	"fmt"
	"math"
)

// Order is the order a list pages in: by the integer column Key (a time in milli- or
// microseconds, usually), then by the column id to order equal keys; largest first when
// Desc (newest first). Its methods write the SQL of one page for List.Page.
type Order struct {
	Key  string
	Desc bool
}

// Read checks a list request: its page size by Size (0 is def) and its cursor by Parse,
// "" being the position before o's first row.
func (o Order) Read(limit, def, max int, cursor string) (size int, after Cursor, err error) {
	if size, err = Size(limit, def, max); err != nil {
		return 0, Cursor{}, err
	}
	first := Cursor{Key: math.MinInt64}
	if o.Desc {
		first.Key = math.MaxInt64
	}
	if after, err = Parse(cursor, first); err != nil {
		return 0, Cursor{}, err
	}
	return size, after, nil
}

// After returns the condition that selects the rows past c in o, for a WHERE clause, and
// its arguments: "(created_us < ? OR (created_us = ? AND id < ?))" newest first.
func (o Order) After(c Cursor) (string, []any) {
	op := ">"
	if o.Desc {
		op = "<"
	}
	return fmt.Sprintf("(%[1]s %[2]s ? OR (%[1]s = ? AND id %[2]s ?))", o.Key, op), []any{c.Key, c.Key, c.ID}
}

// By returns o as an ORDER BY list: "created_us DESC, id DESC" newest first.
func (o Order) By() string {
	if o.Desc {
		return o.Key + " DESC, id DESC"
	}
	return o.Key + ", id"
}
