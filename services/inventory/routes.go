package inventory

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is inventory's whole REST surface. Confirming a hold is gRPC only: it is
// order's saga's step, never a fan's. docs/openapi/inventory.yaml describes the same
// routes; a test keeps the two equal. The gateway restricts /v1/admin/ to internal callers.
func routeTable(log *slog.Logger, store *Store) []route {
	return []route{
		{"GET /v1/events/{id}/seats", handleGetSeats(log, store)},
		{"POST /v1/events/{id}/holds", handlePlaceHold(log, store)},
		{"GET /v1/holds", handleListHolds(log, store)},
		{"GET /v1/holds/{id}", handleGetHold(log, store)},
		{"DELETE /v1/holds/{id}", handleReleaseHold(log, store)},
		{"PUT /v1/admin/events/{id}/seatmap", handlePutSeatMap(log, store)},
	}
}

func routes(log *slog.Logger, store *Store) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, store) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
