package notification

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/nats-io/nats.go/jetstream"

	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"

	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "notification", HTTPAddr: ":8108", GRPCAddr: ":9108"}

// Run starts the process and serves until ctx is done. Without NATS_URL it serves the inbox
// but receives no events.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.Main(ctx, Spec, getenv, stdout, build)
}

// build wires the service. The consumers run as the process's workers: Run returns only
// once they stopped, so a restarted instance never overlaps with the tail of the previous one.
func build(ctx context.Context, s *server.Server) (http.Handler, error) {
	db, err := s.OpenDB(ctx, Migrations())
	if err != nil {
		return nil, err
	}
	store := &Store{DB: db}
	if s.NATS != nil {
		js, err := jetstream.New(s.NATS)
		if err != nil {
			return nil, fmt.Errorf("jetstream: %w", err)
		}
		c := &Consumer{JS: js, Store: store, Log: s.Log, Tracer: s.Telemetry.TracerProvider.Tracer("boxoffice.dev/services/notification"),
			MeterProvider: s.Telemetry.MeterProvider}
		s.Go("consumer", c.Run) // failures are logged and retried; it returns nil at shutdown
	} else {
		s.Log.Warn("NATS_URL is not set: no events will reach the inbox")
	}
	notificationv1.RegisterNotificationServer(s.GRPC(), &grpcServer{store: store})
	return routes(s.Log, store).Mux(), nil
}
