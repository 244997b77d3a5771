package payment

import (
	"context"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"

	paymentv1 "boxoffice.dev/proto/boxoffice/payment/v1"

	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/server"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "payment", HTTPAddr: ":8107", GRPCAddr: ":9107"}

// Config is payment's own configuration. Latency, errors, outages and capacity come from
// the control hook at run time; these set what the hook cannot: answers that come late
// after the money was taken (see LateAnswers).
type Config struct {
	LateRate    float64       // PAYMENT_LATE_RATE: share of charges answered late, 0..1; default 0
	LateLatency time.Duration // PAYMENT_LATE_LATENCY: how late; default 5s
	Seed        uint64        // PAYMENT_SEED: seeds the draw, for reproducible runs; default 1
}

// LoadConfig reads payment's variables.
func LoadConfig(r *config.Reader) Config {
	return Config{
		LateRate:    r.Float("PAYMENT_LATE_RATE", 0, 0, 1),
		LateLatency: r.Duration("PAYMENT_LATE_LATENCY", 5*time.Second),
		Seed:        uint64(r.Int("PAYMENT_SEED", 1, 0, 1<<31-1)),
	}
}

// Run starts the process and serves until ctx is done.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.MainWith(ctx, Spec, getenv, stdout, LoadConfig, func(ctx context.Context, s *server.Server, cfg Config) (http.Handler, error) {
		db, err := s.OpenDB(ctx, Migrations())
		if err != nil {
			return nil, err
		}
		store := &Store{DB: db}
		late := NewLateAnswers(cfg.LateRate, cfg.LateLatency, cfg.Seed)
		// Creating an instrument fails only on an invalid name; a no-op one is returned then.
		charges, _ := s.Telemetry.MeterProvider.Meter("boxoffice.dev/services/payment").Int64Counter("payment.charges",
			metric.WithDescription("Charges made, by status (succeeded, declined, voided)."))
		paymentv1.RegisterPaymentServer(s.GRPC(), &grpcServer{store: store, late: late, charges: charges})
		return routes(s.Log, store).Mux(), nil
	})
}
