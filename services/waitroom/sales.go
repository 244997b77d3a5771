package waitroom

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/protobuf/encoding/protojson"

	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/problem"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

// What SaleFollower reads: the catalog's stream and the subjects of its event changes
// (catalogv1.Stream), and the durable consumer all waitroom replicas share as a work queue,
// since the sale a change opens lives in the Redis they share.
const (
	CatalogStream        = catalogv1.Stream
	catalogEventSubjects = catalogv1.EventSubjects
	SaleConsumer         = "waitroom-sales"
)

// SaleFollower opens the queue (Queue.Open) of every flash sale the catalog has, creates or
// changes, until the queue TTL after the event starts. It learns events from CatalogStream
// and by reading the catalog back at each set-up of its consumer; opening is idempotent, so
// repeats are harmless, and readiness does not wait for the catch-up. Set the fields, then
// call Run once. See docs/lessons/waiting-room.md, "The queue".
type SaleFollower struct {
	// JS is where the catalog publishes; nil follows no stream and catches up once, at
	// start (NATS_URL unset): flash sales created later open no queue that way.
	JS jetstream.JetStream
	// Catalog lists the catalog's events for the catch-up. Required.
	Catalog catalogv1.EventLister
	Queue   *Queue       // opens the sales; required
	Log     *slog.Logger // what was opened and what failed; nil discards
	// MeterProvider receives boxoffice.waitroom.catalog_catchups, by outcome; nil means none.
	MeterProvider metric.MeterProvider
	// RetryEvery is the pause before looking again for a CatalogStream not there yet (the
	// waitroom started first) and before redelivering a failed change; 0 means 1s.
	RetryEvery time.Duration
}

// Run opens the catalog's flash sales until ctx ends, then returns nil. It waits for
// CatalogStream to exist, subscribes again when the consumer goes away, and catches up with
// the catalog after each subscription. The consumer delivers all the stream holds
// (DeliverAll), as earlier builds' durables do and JetStream cannot change: a bounded replay
// of idempotent opens (docs/adr/0005-nats-jetstream-for-events.md, "Following the catalog").
func (f *SaleFollower) Run(ctx context.Context) error {
	if f.Log == nil {
		f.Log = logging.Discard()
	}
	// An id the waitroom refuses never opens: pass it over, as the consumer terminates its change.
	passOver := func(err error) bool { return problem.CodeOf(err) == problem.Invalid }
	catchUp := &natsconn.CatchUp{Pass: catalogv1.Pass(f.Catalog, f.openSale, passOver, f.Log), Source: "the catalog",
		Report: f.countCatchUps(), Log: f.Log}
	catchUp.Follow(ctx, f.JS, CatalogStream, jetstream.ConsumerConfig{
		Durable:       SaleConsumer,
		FilterSubject: catalogEventSubjects,
		DeliverPolicy: jetstream.DeliverAllPolicy, // kept for the durables of earlier builds
		AckPolicy:     jetstream.AckExplicitPolicy,
	}, func(msg jetstream.Msg) { f.handle(ctx, msg) }, natsconn.FollowOptions{RetryEvery: f.retryEvery(), Log: f.Log})
	return nil
}

// handle applies one change and acknowledges it as its outcome says.
func (f *SaleFollower) handle(ctx context.Context, msg jetstream.Msg) {
	event, err := f.apply(ctx, msg.Data())
	switch {
	case err == nil:
		err = msg.Ack()
	case problem.CodeOf(err) == problem.Invalid:
		f.Log.ErrorContext(ctx, "unreadable catalog change", "event", event, "subject", msg.Subject(), "error", err)
		err = msg.Term()
	case ctx.Err() != nil:
		return // shutting down: the server redelivers after its ack wait
	default:
		f.Log.WarnContext(ctx, "flash sale not opened; the change will be redelivered", "event", event, "error", err)
		err = msg.NakWithDelay(f.retryEvery())
	}
	if err != nil {
		f.Log.WarnContext(ctx, "acknowledge catalog change", "event", event, "error", err)
	}
}

// apply decodes a catalogv1.EventChange and opens its event's sale (openSale). A payload
// that cannot be read is an Invalid problem.
func (f *SaleFollower) apply(ctx context.Context, payload []byte) (event string, err error) {
	var change catalogv1.EventChange
	// Fields a newer catalog added are skipped: the services need not deploy in lockstep.
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(payload, &change); err != nil {
		return "", &problem.Error{Code: problem.Invalid, Message: "unreadable catalog change", Err: err}
	}
	e := change.GetEvent()
	if e == nil {
		return "", problem.InvalidField("event", "the change %s carries no event", change.GetId())
	}
	return e.GetId(), f.openSale(ctx, e)
}

// openSale opens e's sale when it is a flash sale, until the queue TTL after it starts, and
// logs it when the sale is open (one whose event started more than the queue TTL ago stays
// closed).
func (f *SaleFollower) openSale(ctx context.Context, e *catalogv1.Event) error {
	if !e.GetFlashSale() {
		return nil
	}
	var until time.Time // no start time: the queue TTL from now
	if e.GetStartsAt() != nil {
		until = e.GetStartsAt().AsTime().Add(f.Queue.queueTTL())
	}
	opened, err := f.Queue.Open(ctx, e.GetId(), until)
	if err == nil && opened {
		f.Log.InfoContext(ctx, "flash sale open to join", "event", e.GetId())
	}
	return err
}

// countCatchUps is the Report of the catch-up: it counts each pass, complete or failed
// (and tried again).
func (f *SaleFollower) countCatchUps() func(context.Context, int, error) {
	mp := f.MeterProvider
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	// An instrument error comes only from a bad name or unit, fixed here: the SDK then
	// returns a working no-op instrument.
	passes, _ := mp.Meter("boxoffice.dev/services/waitroom").Int64Counter("boxoffice.waitroom.catalog_catchups",
		metric.WithDescription("Passes over the catalog's events opening the flash sales the stream no longer holds, by outcome: complete, failed (tried again)."),
		metric.WithUnit("{pass}"))
	return func(ctx context.Context, _ int, err error) {
		outcome := attribute.String("outcome", "complete")
		if err != nil {
			outcome = attribute.String("outcome", "failed")
		}
		passes.Add(ctx, 1, metric.WithAttributes(outcome))
	}
}

func (f *SaleFollower) retryEvery() time.Duration { return cmp.Or(f.RetryEvery, time.Second) }
