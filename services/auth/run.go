package auth

import (
	"context"
	"errors"
	"io"
	"net/http"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/server"
	authv1 "boxoffice.dev/proto/boxoffice/auth/v1"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "auth", HTTPAddr: ":8101", GRPCAddr: ":9101"}

// Run starts the process and serves until ctx is done. Its variables, beside the platform's,
// are those Config's fields name (defaults in DefaultConfig) and SEED_DEMO, which stores the
// demo fans and tenants when there are no users (default false).
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	type settings struct {
		cfg  Config
		seed bool
	}
	load := func(r *config.Reader) settings { return settings{loadConfig(r), r.Bool("SEED_DEMO", false)} }
	return server.MainWith(ctx, Spec, getenv, stdout, load, func(ctx context.Context, s *server.Server, set settings) (http.Handler, error) {
		return build(ctx, s, set.cfg, set.seed)
	})
}

func loadConfig(r *config.Reader) Config {
	c := DefaultConfig()
	c.Issuer = r.String("AUTH_ISSUER", c.Issuer)
	c.AccessTTL = r.Duration("ACCESS_TOKEN_TTL", c.AccessTTL)
	c.RefreshTTL = r.Duration("REFRESH_TOKEN_TTL", c.RefreshTTL)
	c.Rotation = r.Duration("AUTH_KEY_ROTATION", c.Rotation)
	c.PublishLead = r.Duration("AUTH_KEY_PUBLISH_LEAD", c.PublishLead)
	c.DemoSecret = r.String("DEMO_SECRET", c.DemoSecret)
	return c
}

// build wires the service; key maintenance and the outbox relay run as the process's workers.
func build(ctx context.Context, s *server.Server, cfg Config, seed bool) (http.Handler, error) {
	db, err := s.OpenDB(ctx, Migrations())
	if err != nil {
		return nil, err
	}
	if err := outbox.EnsureTable(ctx, db); err != nil {
		return nil, err
	}
	svc, err := NewService(&Store{DB: db}, cfg)
	if err != nil {
		return nil, err
	}
	svc.Log = s.Log
	relay, err := s.RelayOutbox(ctx, db, Stream, StreamSubjects)
	if err != nil {
		return nil, err
	}
	if relay != nil { // without NATS, no events are written
		svc.Events, svc.Committed = true, relay.Notify
	}
	if _, err := svc.RotateKeys(ctx, false); err != nil {
		return nil, err
	}
	// Ready only with a key to sign with; without one every login would answer 503.
	s.Health.Add("signing-key", func(context.Context) error {
		if _, ok := svc.keyring().Signer(svc.Clock.Now()); !ok {
			return errors.New("no active signing key")
		}
		return nil
	})
	if seed {
		seeded, err := svc.SeedDemo(ctx)
		if err != nil {
			return nil, err
		}
		s.Log.InfoContext(ctx, "demo accounts", "seeded", seeded)
	}
	// Every instance rotates and prunes; RotateKeys is safe to race (see its doc), and the
	// instance keeps signing with its copy of the keys while the store is unreachable.
	s.Every("key-rotation", svc.Config.keyCheck(), func(ctx context.Context) error {
		_, err := svc.RotateKeys(ctx, false)
		return err
	})
	s.Every("refresh-prune", refreshPruneEvery, svc.PruneRefresh)
	authv1.RegisterAuthServer(s.GRPC(), &grpcServer{svc: svc})
	return routes(s.Log, svc).Mux(), nil
}
