package server

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/sqldb"
)

// RelayOutbox publishes db's outbox to the JetStream stream named stream (created over
// subjects, or updated to NATS_STREAM_REPLICAS and natsconn's default limits) from a worker;
// commits that added events call the relay's Notify. Rows set aside are counted in
// boxoffice.outbox.set_aside. A stream it cannot create fails the start; with NATS away the
// worker retries until it is back, while events wait in the outbox and the process serves.
// With NATS off (NATS_URL unset) it returns nil, nil: events wait for a process with NATS.
func (s *Server) RelayOutbox(ctx context.Context, db *sqldb.DB, stream string, subjects ...string) (*outbox.Relay, error) {
	if s.NATS == nil {
		return nil, nil
	}
	js, err := jetstream.New(s.NATS)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	ensure := func(ctx context.Context) error {
		_, err := natsconn.EnsureStreamWith(ctx, js, stream, subjects, natsconn.StreamOptions{Replicas: s.Config.NATSStreamReplicas})
		return err
	}
	ready := s.NATS.IsConnected()
	if ready {
		if err := ensure(ctx); err != nil {
			return nil, err
		}
	}
	relay := &outbox.Relay{DB: db, JS: js, Log: s.Log, Ensure: ensure, MeterProvider: s.Telemetry.MeterProvider}
	s.Go("outbox-relay", func(ctx context.Context) error {
		if !ready && !s.ensureStream(ctx, stream, ensure) {
			return nil
		}
		return relay.Run(ctx)
	})
	return relay, nil
}

// ensureStream retries ensure, logging each failure, until it succeeds (true) or ctx ends
// (false). The pause grows from one second to eight.
func (s *Server) ensureStream(ctx context.Context, stream string, ensure func(context.Context) error) bool {
	for wait := time.Second; ; wait = min(2*wait, 8*time.Second) {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := ensure(attempt)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		s.Log.WarnContext(ctx, "outbox relay waits for its stream", "stream", stream, "error", err, "retry_in", wait)
		if clock.Sleep(ctx, wait) != nil {
			return false
		}
	}
}
