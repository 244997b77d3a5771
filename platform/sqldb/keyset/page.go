package keyset

import "boxoffice.dev/platform/problem"

// Size is the number of items a list returns when asked for n: def when n is 0 (a gRPC
// request that names no page_size), n from 1 to max, else an Invalid problem naming limit,
// so a caller asking for too many learns it rather than getting fewer without a word.
func Size(n, def, max int) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 0 || n > max:
		return 0, problem.InvalidField("limit", "want an integer from 1 to %d", max)
	}
	return n, nil
}

// Trim makes one page of rows read with LIMIT limit+1: the extra row only says that another
// page follows. It returns the first limit rows and the String of the cursor of the last of
// them (key gives a row's cursor); the rows as they are and "" when there are no more than
// limit, which is the last page.
func Trim[T any](rows []T, limit int, key func(T) Cursor) (page []T, next string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, key(rows[limit-1]).String()
}
