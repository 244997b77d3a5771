// Package assistant is BoxOffice's assistant: answers about events by deterministic retrieval, each answer priced in tokens.
package assistant

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "assistant", HTTPAddr: ":8109", GRPCAddr: ":9109"}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
