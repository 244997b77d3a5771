package httpapi

import (
	"net/url"
	"strconv"

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
