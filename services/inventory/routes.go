package inventory

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is inventory's whole REST surface. Confirming a hold is gRPC only: it is
// order's saga's step, never a fan's. docs/openapi/inventory.yaml describes the same
// routes; a test keeps the two equal. The gateway restricts /v1/admin/ to internal callers.
func routes(log *slog.Logger, store *Store) httpapi.Routes {
	return httpapi.Routes{
		{Method: "GET", Pattern: "/v1/events/{id}/seats", Handler: handleGetSeats(log, store)},
		{Method: "POST", Pattern: "/v1/events/{id}/holds", Handler: handlePlaceHold(log, store)},
		{Method: "GET", Pattern: "/v1/holds", Handler: handleListHolds(log, store)},
		{Method: "GET", Pattern: "/v1/holds/{id}", Handler: handleGetHold(log, store)},
		{Method: "DELETE", Pattern: "/v1/holds/{id}", Handler: handleReleaseHold(log, store)},
		{Method: "PUT", Pattern: "/v1/admin/events/{id}/seatmap", Handler: handlePutSeatMap(log, store)},
	}
}
