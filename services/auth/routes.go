package auth

import (
	"log/slog"
	"net/http"
)

// route is one entry of the route table: a Go 1.22 mux pattern and its handler.
type route struct {
	pattern string
	handler http.Handler
}

// routeTable is the auth service's whole REST surface. docs/openapi/auth.yaml describes the
// same routes, and a test keeps the two equal. The admin routes need an internal caller.
func routeTable(log *slog.Logger, svc *Service) []route {
	admin := internalOnly(log)
	return []route{
		{"POST /v1/auth/signup", handleSignup(log, svc)},
		{"POST /v1/auth/login", handleLogin(log, svc)},
		{"POST /v1/auth/refresh", handleRefresh(log, svc)},
		{"GET /.well-known/jwks.json", handleJWKS(log, svc)},
		{"POST /v1/admin/tenants", admin(handleCreateTenant(log, svc))},
		{"GET /v1/admin/keys", admin(handleListKeys(svc))},
		{"POST /v1/admin/keys/rotate", admin(handleRotateKeys(log, svc))},
	}
}

// routes returns the route table as one handler.
func routes(log *slog.Logger, svc *Service) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range routeTable(log, svc) {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}
