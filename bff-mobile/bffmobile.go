// Package bffmobile is BoxOffice's bff-mobile: the GraphQL backend-for-frontend shaped for the mobile app.
package bffmobile

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "bff-mobile", HTTPAddr: ":8111", GRPCAddr: ""}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
