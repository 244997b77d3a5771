package catalog

import (
	"slices"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi/catalog.yaml and the route table equal: every
// documented operation is served, and every served route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	endpoints := routes(nil, nil).Endpoints()
	testkit.CheckOpenAPI(t, "../../docs/openapi/catalog.yaml", endpoints)
	for _, want := range []string{"GET /v1/events", "GET /v1/events/{id}", "GET /v1/venues/{id}"} { // the public API the gateway routes here
		if !slices.Contains(endpoints, want) {
			t.Errorf("route table lacks %s", want)
		}
	}
}
