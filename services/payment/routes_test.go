package payment

import (
	"testing"

	"boxoffice.dev/platform/testkit"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi/payment.yaml and the route table equal: every
// documented operation is served, and every served route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	testkit.CheckOpenAPI(t, "../../docs/openapi/payment.yaml", routes(nil, nil).Endpoints())
}
