// Package waitroom is BoxOffice's waitroom: the virtual queue of a flash sale and its signed admission passes.
package waitroom

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "waitroom", HTTPAddr: ":8105", GRPCAddr: ":9105"}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
