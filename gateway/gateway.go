// Package gateway is BoxOffice's gateway: the single front door that routes, authenticates, rate-limits, sheds and balances every request.
package gateway

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "gateway", HTTPAddr: ":8080", GRPCAddr: ""}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
