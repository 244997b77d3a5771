package notification

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"
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

// Inbox is where a Consumer stores the messages it makes; *Store is one.
type Inbox interface {
	// Add stores m unless a message for its event exists, and reports whether it did.
	Add(ctx context.Context, m Message) (Message, bool, error)
}

var _ Inbox = (*Store)(nil)

// Consumer turns events into inbox messages, at least once: a message is acknowledged only
// after its effect is stored (or found stored), and the store's unique event id absorbs the
// repeats. An unreadable payload is terminated; any other failure never drops the event but
// redelivers it after a back-off from Backoff to MaxBackoff. Set the fields, then call Run
// once. Why no dead-letter subject: docs/lessons/failure-modes.md.
type Consumer struct {
	JS    jetstream.JetStream
	Store Inbox
	// Log receives failures; nil discards them.
	Log *slog.Logger
	// Tracer records a span per message, continuing the producer's trace; nil means none.
	Tracer trace.Tracer
	// MeterProvider receives the gauge of events redelivered and not yet stored; nil
	// means none.
	MeterProvider metric.MeterProvider
	// Sources are the streams to read; nil means Sources.
	Sources []Source
	// RetryEvery is how often a consumer looks again for a stream that does not exist yet
	// (its producer has not started); 0 means 1s.
	RetryEvery time.Duration
	// AckWait is how long the server waits for an ack before redelivering; 0 means 10s.
	AckWait time.Duration
	// Backoff is how long an event whose store write failed waits for its first retry;
	// 0 means 1s. Each further failure doubles it, up to MaxBackoff; 0 means 5 minutes.
	// The longer the cap, the fewer retries of a message that cannot be stored, and the
	// longer a message may wait after the cause is fixed.
	Backoff    time.Duration
	MaxBackoff time.Duration

	backoff backoff
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
	c.backoff = newBackoff(c.Backoff, c.MaxBackoff)
	if gauge, err := observeRedelivered(c.MeterProvider, c.JS, sources); err != nil {
		c.Log.WarnContext(ctx, "register the redelivered events gauge", "error", err)
	} else {
		defer func() { _ = gauge.Unregister() }() // fails only for another provider's registration
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
		err = c.retryLater(ctx, msg, err)
	}
	if err != nil {
		c.Log.WarnContext(ctx, "acknowledge event", "subject", msg.Subject(), "error", err)
	}
}

// retryLater hands msg back to the server, to be delivered again after the back-off its
// delivery count calls for, and logs the failure if the back-off says so.
func (c *Consumer) retryLater(ctx context.Context, msg jetstream.Msg, cause error) error {
	n := uint64(1)
	var seq uint64
	if meta, err := msg.Metadata(); err == nil {
		n, seq = max(meta.NumDelivered, 1), meta.Sequence.Stream
	}
	delay := c.backoff.delay(n)
	if level, ok := c.backoff.report(n); ok {
		text := "event not stored; will be redelivered"
		if level >= slog.LevelError {
			text = "event still not stored after many deliveries; retrying at the longest back-off"
		}
		c.Log.Log(ctx, level, text, "subject", msg.Subject(), "stream_seq", seq, "deliveries", n, "retry_in", delay, "error", cause)
	}
	return msg.NakWithDelay(delay)
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
