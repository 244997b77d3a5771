package notification

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/problem"
)

// Source is one stream notification reads: a durable consumer over the subject it wants.
type Source struct {
	Stream  string // the producer's stream, e.g. ORDER
	Durable string // the consumer's name; instances share it, so each event goes to one of them
	Subject string // the filter subject
}

// Sources are what notification reads: the order outcomes, and holds that expired.
var Sources = []Source{
	{Stream: "ORDER", Durable: "notification-order", Subject: "boxoffice.order.order.>"},
	{Stream: "INVENTORY", Durable: "notification-hold-expired", Subject: "boxoffice.inventory.hold.expired"},
}

// Consumer turns events into inbox messages. Set the fields, then call Run once.
//
// Delivery is at least once with explicit acks: a message is acknowledged only after its
// effect is stored (or found already stored), so a crash between the two redelivers it, and
// the store's unique event id absorbs the repeat. A payload that can never be read is
// terminated rather than retried forever.
type Consumer struct {
	JS    jetstream.JetStream
	Store *Store
	// Log receives failures; nil discards them.
	Log *slog.Logger
	// Tracer records a span per message, continuing the producer's trace; nil means none.
	Tracer trace.Tracer
	// Sources are the streams to read; nil means Sources.
	Sources []Source
	// RetryEvery is how often a consumer looks again for a stream that does not exist yet
	// (its producer has not started); 0 means 1s.
	RetryEvery time.Duration
	// AckWait is how long the server waits for an ack before redelivering; 0 means 10s.
	AckWait time.Duration
}

// Run consumes every source until ctx ends, then returns nil. A source whose stream does not
// exist yet is retried until it does, so notification may start before its producers, and a
// consumer that goes away is set up again (natsconn.Follow).
func (c *Consumer) Run(ctx context.Context) error {
	if c.Log == nil {
		c.Log = logging.Discard()
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider().Tracer("notification")
	}
	sources := c.Sources
	if sources == nil {
		sources = Sources
	}
	var wg sync.WaitGroup
	for _, src := range sources {
		wg.Go(func() { c.consume(ctx, src) })
	}
	wg.Wait()
	return nil
}

// consume reads src until ctx ends.
func (c *Consumer) consume(ctx context.Context, src Source) {
	natsconn.Follow(ctx, c.JS, src.Stream, jetstream.ConsumerConfig{
		Durable:       src.Durable,
		FilterSubject: src.Subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cmp.Or(c.AckWait, 10*time.Second),
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}, func(msg jetstream.Msg) { c.handle(ctx, msg) }, natsconn.FollowOptions{RetryEvery: c.RetryEvery, Log: c.Log})
}

// handle stores the message an event makes, then acknowledges it.
func (c *Consumer) handle(ctx context.Context, msg jetstream.Msg) {
	ctx = natsconn.ExtractTrace(ctx, msg.Headers())
	ctx, span := c.Tracer.Start(ctx, "notify "+msg.Subject(), trace.WithSpanKind(trace.SpanKindConsumer))
	defer span.End()
	err := c.apply(ctx, msg.Data())
	switch {
	case err == nil:
		err = msg.Ack()
	case problem.CodeOf(err) == problem.Invalid:
		c.Log.ErrorContext(ctx, "dropping an unreadable event", "subject", msg.Subject(), "error", err)
		err = msg.Term()
	case ctx.Err() != nil:
		return // shutting down: the server redelivers after AckWait
	default:
		c.Log.WarnContext(ctx, "event not stored; will be redelivered", "subject", msg.Subject(), "error", err)
		err = msg.NakWithDelay(time.Second)
	}
	if err != nil {
		c.Log.WarnContext(ctx, "acknowledge event", "subject", msg.Subject(), "error", err)
	}
}

func (c *Consumer) apply(ctx context.Context, payload []byte) error {
	ev, err := Decode(payload)
	if err != nil {
		return err
	}
	m, ok, err := Render(ev)
	if err != nil || !ok {
		return err
	}
	_, _, err = c.Store.Add(ctx, m)
	return err
}
