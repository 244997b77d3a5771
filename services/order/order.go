// Package order is BoxOffice's order: orders created from holds with an Idempotency-Key, paid through a saga.
package order

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "order", HTTPAddr: ":8106", GRPCAddr: ":9106"}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
