package search

import (
	"log/slog"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

// handleSearch answers GET /v1/search?q=&city=&limit= with the best matches and facets.
func handleSearch(log *slog.Logger, index *Index) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		query := Query{Text: q.Get("q"), City: q.Get("city")}
		var err error
		query.Limit, err = httpapi.Limit(q, defaultLimit, maxLimit)
		var res Result
		if err == nil {
			res, err = index.Search(query)
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, res)
	})
}
