package assistant

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is the assistant's whole REST surface. docs/openapi/assistant.yaml describes
// the same routes, and a test keeps the two equal.
func routeTable(log *slog.Logger, a *Assistant) []route {
	return []route{
		{"POST /v1/assistant/ask", handleAsk(log, a)},
	}
}

func routes(log *slog.Logger, a *Assistant) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, a) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
