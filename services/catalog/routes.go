package catalog

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is the catalog's whole REST surface. The admin routes are for seeding and
// tests; the gateway lets only internal callers reach them. docs/openapi/catalog.yaml
// describes the same routes, and a test keeps the two equal.
func routes(log *slog.Logger, store *Store) httpapi.Routes {
	return httpapi.Routes{
		{Method: "GET", Pattern: "/v1/events", Handler: handleListEvents(log, store)},
		{Method: "GET", Pattern: "/v1/events/{id}", Handler: handleGetEvent(log, store)},
		{Method: "GET", Pattern: "/v1/venues/{id}", Handler: handleGetVenue(log, store)},
		{Method: "POST", Pattern: "/v1/admin/venues", Handler: handleCreateVenue(log, store)},
		{Method: "POST", Pattern: "/v1/admin/events", Handler: handleCreateEvent(log, store)},
		{Method: "PATCH", Pattern: "/v1/admin/events/{id}", Handler: handleUpdateEvent(log, store)},
	}
}
