// Package search is BoxOffice's search: an in-memory full-text index of events, a read model fed by catalog events.
package search

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "search", HTTPAddr: ":8103", GRPCAddr: ":9103"}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
