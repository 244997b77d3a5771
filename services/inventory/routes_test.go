package inventory

import (
	"slices"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi/inventory.yaml and the route table equal: every
// documented operation is served, and every served route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	endpoints := routes(nil, nil).Endpoints()
	testkit.CheckOpenAPI(t, "../../docs/openapi/inventory.yaml", endpoints)
	for _, want := range []string{"GET /v1/events/{id}/seats", "POST /v1/events/{id}/holds", "DELETE /v1/holds/{id}"} { // the public API the gateway routes here
		if !slices.Contains(endpoints, want) {
			t.Errorf("route table lacks %s", want)
		}
	}
}
