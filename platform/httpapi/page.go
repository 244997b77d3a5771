package httpapi

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"

	"boxoffice.dev/platform/problem"
)

// Limit reads the page size a list request asks for in its "limit" parameter: def when q has
// none, else an integer from 1 to max. Anything else is an Invalid problem naming limit, so
// ?limit=0 and ?limit=1000 are refused rather than quietly changed.
func Limit(q url.Values, def, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, problem.InvalidField("limit", "want an integer from 1 to %d", max)
	}
	return n, nil
}

// Cursor is a keyset position in a list: the sort key of the last item of a page (a time in
// unix milli- or microseconds, usually) and that item's id, which orders items with equal
// keys. The next page starts after it, so pages stay consistent while items are added,
// which an offset would not.
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

// ParseCursor decodes a cursor String made, and "" as first: the position before the first
// page (Cursor{Key: math.MaxInt64} for a list newest first). Anything else, an id that is
// not valid UTF-8 or holds a control character included, is an Invalid problem naming
// cursor.
func ParseCursor(s string, first Cursor) (Cursor, error) {
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
