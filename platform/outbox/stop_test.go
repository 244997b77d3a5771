package outbox_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// stopAfter publishes through JetStream and, once n messages were acknowledged, stops the
// relay (cancel, as SIGTERM would) while the next publish waits.
type stopAfter struct {
	jetstream.JetStream
	n      int64
	acked  atomic.Int64
	cancel context.CancelFunc
}

func (p *stopAfter) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if p.acked.Load() == p.n {
		p.cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ack, err := p.JetStream.PublishMsg(ctx, m, opts...)
	if err == nil {
		p.acked.Add(1)
	}
	return ack, err
}

// A relay stopped in the middle of a batch marks the rows JetStream already acknowledged:
// left pending, the next relay would send them again and, past the stream's duplicate
// window, store them twice.
func TestRelayStopMarksAcknowledgedRows(t *testing.T) {
	testkit.ForEachDB(t, "outbox", func(t *testing.T, db *sqldb.DB) {
		js, s := setup(t, db)
		for i := range 5 {
			add(t, t.Context(), db, true, fmt.Sprintf("ev-%d", i))
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		relay := &outbox.Relay{DB: db, JS: &stopAfter{JetStream: js, n: 3, cancel: cancel}, Interval: time.Hour}
		done := make(chan error, 1)
		go func() { done <- relay.Run(ctx) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Relay.Run() = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("relay still running 10s after its context ended")
		}
		if got, want := msgCount(t, s), uint64(3); got != want {
			t.Fatalf("stream holds %d messages, want %d", got, want)
		}
		if got, want := pending(t, db), 2; got != want {
			t.Errorf("rows pending after a stop mid-batch = %d, want %d: the 3 acknowledged rows marked", got, want)
		}
	})
}
