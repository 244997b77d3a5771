package payment

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is payment's whole REST surface. Charges and refunds are gRPC only: they are
// service-to-service calls (order's saga), never a client's. docs/openapi/payment.yaml
// describes the same routes; a test keeps the two equal.
func routeTable(log *slog.Logger, store *Store) []route {
	return []route{
		{"GET /v1/admin/charges", handleListCharges(log, store)},
	}
}

func routes(log *slog.Logger, store *Store) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, store) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
