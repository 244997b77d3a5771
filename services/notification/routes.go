package notification

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is notification's whole REST surface; docs/openapi/notification.yaml describes
// the same routes and a test keeps the two equal.
func routeTable(log *slog.Logger, store *Store) []route {
	return []route{
		{"GET /v1/notifications", handleInbox(log, store)},
	}
}

func routes(log *slog.Logger, store *Store) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, store) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
