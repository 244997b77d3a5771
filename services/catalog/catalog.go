// Package catalog is BoxOffice's catalog: venues, events, performers and prices; read-heavy, emits catalog events.
package catalog

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "catalog", HTTPAddr: ":8102", GRPCAddr: ":9102"}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
