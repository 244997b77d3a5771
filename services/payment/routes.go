package payment

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is payment's whole REST surface. Charges and refunds are gRPC only: they are
// service-to-service calls (order's saga), never a client's. docs/openapi/payment.yaml
// describes the same routes; a test keeps the two equal.
func routes(log *slog.Logger, store *Store) httpapi.Routes {
	return httpapi.Routes{
		{Method: "GET", Pattern: "/v1/admin/charges", Handler: handleListCharges(log, store)},
	}
}
