package order

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is order's whole REST surface; docs/openapi/order.yaml describes the same
// routes and a test keeps the two equal.
func routeTable(log *slog.Logger, orders *Orders) []route {
	return []route{
		{"POST /v1/orders", handlePlace(log, orders)},
		{"GET /v1/orders", handleList(log, orders)},
		{"GET /v1/orders/{id}", handleGet(log, orders)},
	}
}

func routes(log *slog.Logger, orders *Orders) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, orders) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
