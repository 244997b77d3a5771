package search

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"boxoffice.dev/platform/problem"
)

// handleSearch answers GET /v1/search?q=&city=&limit= with the best matches and facets.
func handleSearch(log *slog.Logger, index *Index) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		query := Query{Text: q.Get("q"), City: q.Get("city")}
		var err error
		if v := q.Get("limit"); v != "" {
			if query.Limit, err = strconv.Atoi(v); err != nil || query.Limit < 1 {
				err = problem.InvalidField("limit", "want 1 to %d", maxLimit)
			}
		}
		var res Result
		if err == nil {
			res, err = index.Search(query)
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	})
}
