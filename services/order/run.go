package order

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "order", HTTPAddr: ":8106", GRPCAddr: ":9106"}

// Config is order's own configuration, beside the platform's.
type Config struct {
	PaymentAddr    string        // PAYMENT_GRPC_ADDR
	InventoryAddr  string        // INVENTORY_GRPC_ADDR
	CatalogAddr    string        // CATALOG_GRPC_ADDR: ticket prices
	CallTimeout    time.Duration // ORDER_CALL_TIMEOUT: each call to inventory or catalog
	PaymentTimeout time.Duration // ORDER_PAYMENT_TIMEOUT: each call to payment; a slower charge's outcome is unknown
	MaxAttempts    int           // ORDER_PAYMENT_ATTEMPTS: charges with an unknown outcome before giving up
	StallAfter     time.Duration // ORDER_STALL_AFTER: when the recovery loop resumes a quiet saga
	Workers        int           // ORDER_WORKERS: sagas advancing at once
}

// LoadConfig reads order's variables; the defaults are the all-in-one mode's ports.
func LoadConfig(r *config.Reader) Config {
	return Config{
		PaymentAddr:    r.String("PAYMENT_GRPC_ADDR", "127.0.0.1:9107"),
		InventoryAddr:  r.String("INVENTORY_GRPC_ADDR", "127.0.0.1:9104"),
		CatalogAddr:    r.String("CATALOG_GRPC_ADDR", "127.0.0.1:9102"),
		CallTimeout:    r.Duration("ORDER_CALL_TIMEOUT", 2*time.Second),
		PaymentTimeout: r.Duration("ORDER_PAYMENT_TIMEOUT", 2*time.Second),
		MaxAttempts:    r.Int("ORDER_PAYMENT_ATTEMPTS", 3, 1, 20),
		StallAfter:     r.Duration("ORDER_STALL_AFTER", 30*time.Second),
		Workers:        r.Int("ORDER_WORKERS", 8, 1, 256),
	}
}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.MainWith(ctx, Spec, getenv, stdout, LoadConfig, build)
}

// build wires the service. The relay and the saga run as the process's workers: Run returns
// only once they stopped, so a restarted instance never overlaps with the tail of the
// previous one.
func build(ctx context.Context, s *server.Server, cfg Config) (http.Handler, error) {
	db, err := s.OpenDB(ctx, Migrations())
	if err != nil {
		return nil, err
	}
	if err := outbox.EnsureTable(ctx, db); err != nil {
		return nil, err
	}
	store := &Store{DB: db}
	relay, err := s.RelayOutbox(ctx, db, Stream, Subjects...)
	if err != nil {
		return nil, err
	}
	if relay != nil {
		store.Committed = relay.Notify
	} else {
		s.Log.Warn("NATS_URL is not set: order events stay in the outbox until a relay runs")
	}

	dial := func(addr string) (*grpc.ClientConn, error) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), s.Telemetry.GRPCDialOption())
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		s.OnClose(conn.Close) // after the saga, which calls through it, has stopped
		return conn, nil
	}
	payment, err := dial(cfg.PaymentAddr)
	if err != nil {
		return nil, err
	}
	inventory, err := dial(cfg.InventoryAddr)
	if err != nil {
		return nil, err
	}
	catalog, err := dial(cfg.CatalogAddr)
	if err != nil {
		return nil, err
	}

	holds := newInventoryHolds(inventory)
	saga := &Saga{Store: store, Holds: holds, Payments: newPaymentClient(payment), Log: s.Log,
		CallTimeout: cfg.CallTimeout, PaymentTimeout: cfg.PaymentTimeout, MaxAttempts: cfg.MaxAttempts, StallAfter: cfg.StallAfter, Workers: cfg.Workers,
		MeterProvider: s.Telemetry.MeterProvider}
	s.Go("saga", saga.Run)
	orders := &Service{Store: store, Holds: holds, Prices: newCatalogPrices(catalog), Saga: saga}
	orderv1.RegisterOrderServer(s.GRPC(), &grpcServer{orders: orders})
	return routes(s.Log, orders).Mux(), nil
}
