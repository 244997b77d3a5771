// Package notification is BoxOffice's notification: messages sent to fans, built from order and hold events.
package notification

import (
	"context"
	"io"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "notification", HTTPAddr: ":8108", GRPCAddr: ":9108"}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, nil)
}
