// Package bffweb is BoxOffice's bff-web: the GraphQL backend-for-frontend shaped for the web app.
package bffweb

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "bff-web", HTTPAddr: ":8112", GRPCAddr: ""}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
