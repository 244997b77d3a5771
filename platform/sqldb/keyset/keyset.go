// Package keyset is the position of keyset paging: a list reads the page after the last item
// it sent (WHERE (key, id) > (?, ?)), never at an offset, so pages stay consistent while
// items are added.
//
// It sits beside sqldb, not in an HTTP package, because the stores that page with it are
// its users; the cursor reaches a client only as the opaque string String makes.
package keyset

import (
	"encoding/base64"
	"strconv"
	"strings"

	"boxoffice.dev/platform/problem"
)

// Cursor is a keyset position in a list: the sort key of the last item of a page (a time in
// unix milli- or microseconds, usually) and that item's id, which orders items with equal
// keys. The next page starts after it.
type Cursor struct {
	Key int64
	ID  string
}

// String is c as the opaque next_cursor a client passes back: base64url of "<key>:<id>".
// Nothing in it is secret; a list must still scope what it reads to the caller (an account's
// own orders), whatever a cursor says.
func (c Cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Key, 10) + ":" + c.ID))
}

// Parse decodes a cursor String made, and "" as first: the position before the first page
// (Cursor{Key: math.MaxInt64} for a list newest first). Anything else, an id that is not
// valid UTF-8 or holds a control character included, is an Invalid problem naming cursor.
func Parse(s string, first Cursor) (Cursor, error) {
	if s == "" {
		return first, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		key, id, ok := strings.Cut(string(b), ":")
		// The id goes into a query as it is, so it is held to what a path or a query
		// value is: PostgreSQL would fail on NUL or invalid UTF-8 (problem.CheckText).
		n, err := strconv.ParseInt(key, 10, 64)
		if ok && err == nil && id != "" && problem.CheckText("cursor", id) == nil {
			return Cursor{Key: n, ID: id}, nil
		}
	}
	return Cursor{}, problem.InvalidField("cursor", "want a next_cursor from a previous page")
}
