package catalog

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is the catalog's whole REST surface. The admin routes are for seeding and
// tests; the gateway lets only internal callers reach them. docs/openapi/catalog.yaml
// describes the same routes, and a test keeps the two equal.
func routeTable(log *slog.Logger, store *Store) []route {
	return []route{
		{"GET /v1/events", handleListEvents(log, store)},
		{"GET /v1/events/{id}", handleGetEvent(log, store)},
		{"GET /v1/venues/{id}", handleGetVenue(log, store)},
		{"POST /v1/admin/venues", handleCreateVenue(log, store)},
		{"POST /v1/admin/events", handleCreateEvent(log, store)},
		{"PATCH /v1/admin/events/{id}", handleUpdateEvent(log, store)},
	}
}

func routes(log *slog.Logger, store *Store) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, store) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
