package auth

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is the auth service's whole REST surface. docs/openapi/auth.yaml describes the
// same routes, and a test keeps the two equal. The admin routes need an internal caller.
func routes(log *slog.Logger, svc *Service) httpapi.Routes {
	admin := internalOnly(log)
	return httpapi.Routes{
		{Method: "POST", Pattern: "/v1/auth/signup", Handler: handleSignup(log, svc)},
		{Method: "POST", Pattern: "/v1/auth/login", Handler: handleLogin(log, svc)},
		{Method: "POST", Pattern: "/v1/auth/refresh", Handler: handleRefresh(log, svc)},
		{Method: "GET", Pattern: "/.well-known/jwks.json", Handler: handleJWKS(log, svc)},
		{Method: "POST", Pattern: "/v1/admin/tenants", Handler: admin(handleCreateTenant(log, svc))},
		{Method: "GET", Pattern: "/v1/admin/keys", Handler: admin(handleListKeys(svc))},
		{Method: "POST", Pattern: "/v1/admin/keys/rotate", Handler: admin(handleRotateKeys(log, svc))},
	}
}
