package payment

import (
	"context"
	"io"
	"net/http"

	paymentv1 "boxoffice.dev/proto/boxoffice/payment/v1"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "payment", HTTPAddr: ":8107", GRPCAddr: ":9107"}

// Run starts the process and serves until ctx is done. Payment has no variables of its own:
// its misbehaviour (latency, errors, outage, capacity) is the control hook's, set at run time.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, build)
}

func build(ctx context.Context, s *server.Server) (http.Handler, error) {
	db, err := s.OpenDB(ctx, migrations)
	if err != nil {
		return nil, err
	}
	store := NewStore(db)
	paymentv1.RegisterPaymentServer(s.GRPC(), &grpcServer{store: store})
	return routes(s.Log, store), nil
}
