package sqldb

import (
	"strconv"
	"strings"
)

// Rebind rewrites the `?` placeholders of query for the DB's dialect: unchanged for SQLite,
// `$1..$n` for PostgreSQL. A `?` inside a single-quoted string, a double-quoted identifier or
// a `--` comment is left alone. PostgreSQL's jsonb operators `?`, `?|` and `?&` cannot be
// told from placeholders: a query using them is written for PostgreSQL with `$n` and not
// rebound.
func (db *DB) Rebind(query string) string {
	if db.Dialect != Postgres {
		return query
	}
	return rebindDollar(query)
}

func rebindDollar(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	var quote byte // the quote we are inside of, or 0
	comment := false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
			}
		case quote != 0:
			// A doubled quote ('it''s') closes and reopens: toggling twice is the same.
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			comment = true
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
