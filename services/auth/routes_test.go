package auth

import (
	"slices"
	"testing"

	"boxoffice.dev/platform/testkit"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi/auth.yaml and the route table equal: every
// documented operation is served, and every served route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	endpoints := routes(nil, nil).Endpoints()
	testkit.CheckOpenAPI(t, "../../docs/openapi/auth.yaml", endpoints)
	for _, want := range []string{"POST /v1/auth/signup", "POST /v1/auth/login", "POST /v1/auth/refresh", "GET /.well-known/jwks.json"} { // the public API the gateway routes here
		if !slices.Contains(endpoints, want) {
			t.Errorf("route table lacks %s", want)
		}
	}
}
