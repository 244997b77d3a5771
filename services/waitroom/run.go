package waitroom

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
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
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
	"boxoffice.dev/services/waitroom/pass"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "waitroom", HTTPAddr: ":8105", GRPCAddr: ":9105"}

// Config is the waitroom's own configuration, beside the platform's (config.Process).
type Config struct {
	// SigningKey signs admission passes (WAITROOM_SIGNING_KEY, the base64 32-byte seed; see
	// package pass for how to make one). nil generates a key at start.
	SigningKey     ed25519.PrivateKey
	AdmitPerSecond int           // WAITROOM_ADMIT_PER_SECOND: default rate per event; default 50
	PassTTL        time.Duration // WAITROOM_PASS_TTL: how long a pass lasts; default 5m
	QueueTTL       time.Duration // WAITROOM_QUEUE_TTL: how long an idle queue lives; default 6h
	AdmitInterval  time.Duration // WAITROOM_ADMIT_INTERVAL: how often the admitter runs; default 100ms
	CatalogAddr    string        // CATALOG_GRPC_ADDR: the catalog's gRPC host:port, to catch up with its flash sales; default 127.0.0.1:9102
}

// LoadConfig reads Config through r; problems are reported by r.Err.
func LoadConfig(r *config.Reader) (c Config) {
	c = Config{
		AdmitPerSecond: r.Int("WAITROOM_ADMIT_PER_SECOND", DefaultAdmitPerSecond, 1, MaxAdmitPerSecond),
		PassTTL:        r.Duration("WAITROOM_PASS_TTL", DefaultPassTTL),
		QueueTTL:       r.Duration("WAITROOM_QUEUE_TTL", DefaultQueueTTL),
		AdmitInterval:  r.Duration("WAITROOM_ADMIT_INTERVAL", 100*time.Millisecond),
		CatalogAddr:    r.Addr("CATALOG_GRPC_ADDR", "127.0.0.1:9102"),
	}
	if v := r.String("WAITROOM_SIGNING_KEY", ""); v != "" {
		var err error
		if c.SigningKey, err = pass.ParsePrivateKey(v); err != nil {
			r.Fail("WAITROOM_SIGNING_KEY", "(hidden)", "a base64 32-byte Ed25519 seed")
		}
	}
	return c
}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.MainWith(ctx, Spec, getenv, stdout, LoadConfig, build)
}

// build wires the service; the admitter and the follower of the catalog's flash sales run
// as the process's workers.
func build(ctx context.Context, s *server.Server, cfg Config) (http.Handler, error) {
	rdb, err := s.Redis(ctx)
	if err != nil {
		return nil, err
	}
	key := cfg.SigningKey
	if key == nil {
		if key, err = generateKey(s.Log); err != nil {
			return nil, err
		}
	}
	q := &Queue{Redis: rdb, Key: key, DefaultRate: cfg.AdmitPerSecond, PassTTL: cfg.PassTTL, QueueTTL: cfg.QueueTTL,
		MeterProvider: s.Telemetry.MeterProvider}
	// Every replica admits: the scripts' shared per-second budget keeps the total at the rate
	// (see admitScript).
	s.Every("admitter", cfg.AdmitInterval, func(ctx context.Context) error {
		_, err := q.AdmitAll(ctx)
		return err
	})
	catalog, err := grpcclient.Dial(cfg.CatalogAddr, grpcclient.Options{Telemetry: s.Telemetry, Service: "catalog"})
	if err != nil {
		return nil, err
	}
	s.OnClose(catalog.Close)
	sales := &SaleFollower{Catalog: catalogv1.NewCatalogClient(catalog), Queue: q, Log: s.Log, MeterProvider: s.Telemetry.MeterProvider}
	if s.NATS != nil {
		if sales.JS, err = jetstream.New(s.NATS); err != nil {
			return nil, fmt.Errorf("jetstream: %w", err)
		}
	} else {
		// Still once at start: inventory lays out the maps of the flash sales the catalog has,
		// and without a queue, hence a pass, none of their tickets could be held.
		s.Log.Warn("NATS_URL is not set: only the catalog's flash sales at start open queues; " +
			"others only by PUT /v1/admin/events/{id}/queue")
	}
	s.Go("sale-consumer", sales.Run) // waits for the catalog's stream and the catalog; returns nil at shutdown
	waitroomv1.RegisterWaitroomServer(s.GRPC(), &grpcServer{queue: q})
	return routes(s.Log, q).Mux(), nil
}

// generateKey makes a signing key for a process started without WAITROOM_SIGNING_KEY and
// logs its public half for inventory (WAITROOM_PUBLIC_KEY). Fine for one process on a laptop
// only: inventory verifies passes with one public key, so every replica must sign with the
// same key, kept across restarts, or admitted fans' passes are refused as they try to buy.
func generateKey(log *slog.Logger) (ed25519.PrivateKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	log.Warn("WAITROOM_SIGNING_KEY is not set: signing passes with a key generated for this process only; give inventory its public key",
		"WAITROOM_PUBLIC_KEY", pass.EncodePublicKey(pub))
	return priv, nil
}
