package waitroom

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is the waitroom's whole REST surface. docs/openapi/waitroom.yaml describes the
// same routes; a test keeps the two equal. The gateway restricts /v1/admin/ to internal
// callers (the playground turns the admission rate through it).
func routes(log *slog.Logger, q *Queue) httpapi.Routes {
	return httpapi.Routes{
		{Method: "POST", Pattern: "/v1/events/{id}/queue", Handler: handleJoin(log, q)},
		{Method: "GET", Pattern: "/v1/events/{id}/queue/me", Handler: handleStatus(log, q)},
		{Method: "GET", Pattern: "/v1/admin/events/{id}/queue", Handler: handleGetSettings(log, q)},
		{Method: "PUT", Pattern: "/v1/admin/events/{id}/queue", Handler: handlePutSettings(log, q)},
	}
}
