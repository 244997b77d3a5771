// Package auth is BoxOffice's auth: users, password hashes, API keys with tenant and plan, and the keys that sign access tokens (JWKS).
package auth

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "auth", HTTPAddr: ":8101", GRPCAddr: ":9101"}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
