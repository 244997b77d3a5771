package assistant

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "assistant", HTTPAddr: ":8109", GRPCAddr: ":9109"}

// Run starts the process and serves until ctx is done. Its own variable: CATALOG_GRPC_ADDR,
// the catalog's gRPC host:port (default 127.0.0.1:9102).
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	catalog := func(r *config.Reader) string { return r.Addr("CATALOG_GRPC_ADDR", "127.0.0.1:9102") }
	return server.MainWith(ctx, Spec, getenv, stdout, catalog, func(ctx context.Context, s *server.Server, catalogAddr string) (http.Handler, error) {
		conn, err := grpc.NewClient(catalogAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), s.Telemetry.GRPCDialOption())
		if err != nil {
			return nil, fmt.Errorf("catalog client: %w", err)
		}
		s.OnClose(conn.Close)
		a := &Assistant{Catalog: catalogv1.NewCatalogClient(conn)}
		assistantv1.RegisterAssistantServer(s.GRPC(), &grpcServer{assistant: a})
		return routes(s.Log, a).Mux(), nil
	})
}
