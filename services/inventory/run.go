package inventory

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/grpcclient"
	"boxoffice.dev/platform/server"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	"boxoffice.dev/services/waitroom/pass"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "inventory", HTTPAddr: ":8104", GRPCAddr: ":9104"}

// Config is inventory's own configuration, beside the platform's (config.Process).
type Config struct {
	HoldTTL       time.Duration     // HOLD_TTL: how long a hold keeps its seats; default 5m
	SweepInterval time.Duration     // HOLD_SWEEP_INTERVAL: how often expired holds are released; default 1s
	AccountCap    int               // HOLD_ACCOUNT_CAP: tickets of one event one account may hold at a time; default 8
	PassKey       ed25519.PublicKey // WAITROOM_PUBLIC_KEY: base64 Ed25519 key; unset refuses flash-sale holds
	CatalogAddr   string            // CATALOG_GRPC_ADDR: the catalog's gRPC host:port, to catch up with its events; default 127.0.0.1:9102
}

// maxAccountCap bounds HOLD_ACCOUNT_CAP: a cap past any venue's size is no cap, and a typo
// should not pass for one.
const maxAccountCap = 10_000

// LoadConfig reads Config through r; problems are reported by r.Err, and by err for the
// one variable the Reader cannot parse itself (the key).
func LoadConfig(r *config.Reader) (c Config) {
	c = Config{
		HoldTTL:       r.Duration("HOLD_TTL", DefaultHoldTTL),
		SweepInterval: r.Duration("HOLD_SWEEP_INTERVAL", time.Second),
		AccountCap:    r.Int("HOLD_ACCOUNT_CAP", DefaultMaxTicketsPerAccount, 1, maxAccountCap),
		CatalogAddr:   r.Addr("CATALOG_GRPC_ADDR", "127.0.0.1:9102"),
	}
	if v := r.String("WAITROOM_PUBLIC_KEY", ""); v != "" {
		var err error
		if c.PassKey, err = pass.ParsePublicKey(v); err != nil {
			r.Fail("WAITROOM_PUBLIC_KEY", v, "a base64 32-byte Ed25519 public key")
		}
	}
	return c
}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.MainWith(ctx, Spec, getenv, stdout, LoadConfig, build)
}

// build wires the service; the outbox relay, the catalog's seat-map consumer (SeatMapper)
// and the hold sweeper run as the process's workers.
func build(ctx context.Context, s *server.Server, cfg Config) (http.Handler, error) {
	db, err := s.OpenDB(ctx, Migrations())
	if err != nil {
		return nil, err
	}
	store := &Store{DB: db, HoldTTL: cfg.HoldTTL, MaxTicketsPerAccount: cfg.AccountCap, PassKey: cfg.PassKey,
		MeterProvider: s.Telemetry.MeterProvider}
	if err := store.Init(ctx); err != nil {
		return nil, err
	}
	if cfg.PassKey == nil {
		s.Log.Warn("WAITROOM_PUBLIC_KEY is not set: holds on flash-sale events are refused")
	}
	relay, err := s.RelayOutbox(ctx, db, Stream, StreamSubjects)
	if err != nil {
		return nil, err
	}
	if relay != nil {
		store.Committed = relay.Notify
	}
	catalog, err := grpcclient.Dial(cfg.CatalogAddr, grpcclient.Options{Telemetry: s.Telemetry, Service: "catalog"})
	if err != nil {
		return nil, err
	}
	s.OnClose(catalog.Close)
	mapper := &SeatMapper{Catalog: catalogv1.NewCatalogClient(catalog), Store: store, Log: s.Log,
		Tracer: s.Telemetry.TracerProvider.Tracer("boxoffice.dev/services/inventory")}
	if s.NATS != nil {
		if mapper.JS, err = jetstream.New(s.NATS); err != nil {
			return nil, fmt.Errorf("jetstream: %w", err)
		}
	} else {
		s.Log.Warn("NATS_URL is not set: hold events stay in the outbox until a relay runs, " +
			"and only the events the catalog has at start get seat maps; others only from PUT /v1/admin/events/{id}/seatmap")
	}
	s.Go("seatmap-consumer", mapper.Run) // waits for the catalog's stream and the catalog; returns nil at shutdown
	s.Every("hold-sweeper", cfg.SweepInterval, func(ctx context.Context) error { return sweep(ctx, store, s.Log) })
	inventoryv1.RegisterInventoryServer(s.GRPC(), &grpcServer{store: store})
	return routes(s.Log, store).Mux(), nil
}

// sweepBatch is how many due holds one ExpireDue call takes; a sweep repeats it while
// batches come back full, so a flash sale's worth of abandoned holds clears in one tick.
const sweepBatch = 100

// sweep expires the holds due now, batch after batch while batches come back full. Every
// instance sweeps (Server.Every): the work is idempotent (see ExpireDue), and no leader
// election is needed for a job whose worst duplicate is a no-op.
func sweep(ctx context.Context, store *Store, log *slog.Logger) error {
	for {
		n, err := store.ExpireDue(ctx, sweepBatch)
		if err != nil {
			return fmt.Errorf("expire holds: %w", err)
		}
		if n > 0 {
			log.InfoContext(ctx, "expired holds", "count", n)
		}
		if n < sweepBatch {
			return nil
		}
	}
}
