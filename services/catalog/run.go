package catalog

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

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
	r := config.New(getenv)
	seed := r.Bool("SEED_DEMO", false)
	if err := r.Err(); err != nil {
		return fmt.Errorf("%s: configuration: %w", Spec.Name, err)
	}
	// The relay runs beside the server; Run returns only once it has stopped too.
	ctx, cancel := context.WithCancel(ctx)
	var background sync.WaitGroup
	defer background.Wait()
	defer cancel()
	return server.Main(ctx, Spec, getenv, stdout, func(ctx context.Context, s *server.Server) (http.Handler, error) {
		return build(ctx, s, seed, &background)
	})
}

func build(ctx context.Context, s *server.Server, seed bool, background *sync.WaitGroup) (http.Handler, error) {
	db, err := s.OpenDB(ctx, Migrations())
	if err != nil {
		return nil, err
	}
	if err := outbox.EnsureTable(ctx, db); err != nil {
		return nil, err
	}
	store := &Store{DB: db, Emit: s.NATS != nil}
	if s.NATS != nil {
		js, err := jetstream.New(s.NATS)
		if err != nil {
			return nil, fmt.Errorf("jetstream: %w", err)
		}
		relay, err := newRelay(ctx, db, js, s.Log)
		if err != nil {
			return nil, err
		}
		store.Committed = relay.Notify
		background.Go(func() { _ = relay.Run(ctx) }) // Run only ends, with nil, when ctx does
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
