package server

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/sqldb"
)

// RelayOutbox publishes db's outbox (see outbox.EnsureTable) to the JetStream stream named
// stream, which it creates over subjects if missing, from a worker of this process (Go).
// Commits that added events call the returned relay's Notify to have them published at once.
//
// With NATS off (NATS_URL unset) it returns nil and no error: events written to the outbox
// wait there until a process with NATS relays them, and the service decides whether to
// write them at all.
func (s *Server) RelayOutbox(ctx context.Context, db *sqldb.DB, stream string, subjects ...string) (*outbox.Relay, error) {
	if s.NATS == nil {
		return nil, nil
	}
	js, err := jetstream.New(s.NATS)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if _, err := natsconn.EnsureStream(ctx, js, stream, subjects); err != nil {
		return nil, err
	}
	relay := &outbox.Relay{DB: db, JS: js, Log: s.Log}
	s.Go("outbox-relay", relay.Run)
	return relay, nil
}
