package catalog

import (
	"context"
	"io"
	"net/http"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/server"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "catalog", HTTPAddr: ":8102", GRPCAddr: ":9102"}

// Run starts the process and serves until ctx is done. Its own variable: SEED_DEMO (default
// false) stores the demo catalog at start when the catalog is empty.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	seedDemo := func(r *config.Reader) bool { return r.Bool("SEED_DEMO", false) }
	return server.MainWith(ctx, Spec, getenv, stdout, seedDemo, build)
}

// build wires the service; the outbox relay runs as the process's worker.
func build(ctx context.Context, s *server.Server, seed bool) (http.Handler, error) {
	db, err := s.OpenDB(ctx, Migrations())
	if err != nil {
		return nil, err
	}
	if err := outbox.EnsureTable(ctx, db); err != nil {
		return nil, err
	}
	relay, err := s.RelayOutbox(ctx, db, Stream, StreamSubjects)
	if err != nil {
		return nil, err
	}
	store := &Store{DB: db}
	if relay != nil { // without NATS, no events are written
		store.Emit, store.Committed = true, relay.Notify
	}
	if seed {
		seeded, err := store.Seed(ctx)
		if err != nil {
			return nil, err
		}
		s.Log.InfoContext(ctx, "demo catalog", "seeded", seeded)
	}
	catalogv1.RegisterCatalogServer(s.GRPC(), &grpcServer{store: store})
	return routes(s.Log, store).Mux(), nil
}
