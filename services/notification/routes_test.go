package notification

import (
	"slices"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi/notification.yaml and the route table equal: every
// documented operation is served, and every served route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	endpoints := routes(nil, nil).Endpoints()
	testkit.CheckOpenAPI(t, "../../docs/openapi/notification.yaml", endpoints)
	for _, want := range []string{"GET /v1/notifications"} { // the public API the gateway routes here
		if !slices.Contains(endpoints, want) {
			t.Errorf("route table lacks %s", want)
		}
	}
}
