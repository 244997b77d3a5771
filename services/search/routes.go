package search

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is the search service's whole REST surface. docs/openapi/search.yaml describes
// the same routes, and a test keeps the two equal.
func routeTable(log *slog.Logger, index *Index) []route {
	return []route{
		{"GET /v1/search", handleSearch(log, index)},
	}
}

func routes(log *slog.Logger, index *Index) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, index) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
