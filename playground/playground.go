// Package playground is BoxOffice's learning playground: a web UI and JSON API that launch
// scenarios against the running system and stream their live series, and the algorithm lab.
package playground

import (
	"context"
	"io"
	"net/http"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "playground", HTTPAddr: ":8090", GRPCAddr: ""}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		return routes().Mux(), nil
	})
}
