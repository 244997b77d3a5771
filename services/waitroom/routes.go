package waitroom

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is the waitroom's whole REST surface. docs/openapi/waitroom.yaml describes the
// same routes; a test keeps the two equal. The gateway restricts /v1/admin/ to internal
// callers (the playground turns the admission rate through it).
func routeTable(log *slog.Logger, q *Queue) []route {
	return []route{
		{"POST /v1/events/{id}/queue", handleJoin(log, q)},
		{"GET /v1/events/{id}/queue/me", handleStatus(log, q)},
		{"GET /v1/admin/events/{id}/queue", handleGetSettings(log, q)},
		{"PUT /v1/admin/events/{id}/queue", handlePutSettings(log, q)},
	}
}

func routes(log *slog.Logger, q *Queue) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, q) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
