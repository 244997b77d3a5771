package order

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is order's whole REST surface; docs/openapi/order.yaml describes the same
// routes and a test keeps the two equal.
func routes(log *slog.Logger, orders *Service) httpapi.Routes {
	return httpapi.Routes{
		{Method: "POST", Pattern: "/v1/orders", Handler: handlePlace(log, orders)},
		{Method: "GET", Pattern: "/v1/orders", Handler: handleList(log, orders)},
		{Method: "GET", Pattern: "/v1/orders/{id}", Handler: handleGet(log, orders)},
	}
}
