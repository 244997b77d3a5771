package search

import (
	"slices"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi/search.yaml and the route table equal: every
// documented operation is served, and every served route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	endpoints := routes(nil, nil).Endpoints()
	testkit.CheckOpenAPI(t, "../../docs/openapi/search.yaml", endpoints)
	for _, want := range []string{"GET /v1/search"} { // the public API the gateway routes here
		if !slices.Contains(endpoints, want) {
			t.Errorf("route table lacks %s", want)
		}
	}
}
