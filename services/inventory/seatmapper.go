package inventory

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/encoding/protojson"

	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/problem"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

// The catalog's stream and the subjects of its event changes (catalogv1.Stream).
const (
	CatalogStream        = catalogv1.Stream
	catalogEventSubjects = catalogv1.EventSubjects
)

// SeatMapConsumer is the durable consumer on CatalogStream that every inventory replica
// shares, as a work queue: the seat maps live in the database they share, so one replica
// applying a change is enough.
const SeatMapConsumer = "inventory-seatmaps"

// catalogChangeJSON reads the catalog's payloads, skipping fields a newer catalog added, so
// the two services need not be deployed in lockstep.
var catalogChangeJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// SeatMapper gives every event the catalog has, creates or changes its default seat map
// (DefaultLayout) and sale window (CatalogSale) through Store.ApplyCatalogLayout, which makes
// a repeat a no-op. It learns events from CatalogStream and by reading the catalog back at
// each set-up of its consumer; readiness does not wait for it. Set the fields, then call Run once.
// See docs/adr/0005-nats-jetstream-for-events.md, "Following the catalog".
type SeatMapper struct {
	// JS is the JetStream the catalog publishes to; nil follows no stream and catches up
	// once, at start (NATS_URL unset): events created later get no seat map that way.
	JS jetstream.JetStream
	// Catalog lists the catalog's events for the catch-up. Required.
	Catalog catalogv1.EventLister
	// Store applies the changes. Required.
	Store *Store
	// Log receives what was done and what failed; nil discards it.
	Log *slog.Logger
	// Tracer records a span per change, continuing the catalog's trace; nil records none.
	Tracer trace.Tracer
	// RetryEvery is the pause before looking again for a CatalogStream that does not exist
	// yet (inventory started before the catalog) and before a failed change is redelivered;
	// 0 means 1s.
	RetryEvery time.Duration
	// AckWait is how long the server waits for an ack before handing a change to another
	// replica; 0 means 30s, long enough to lay out the largest map a Layout allows.
	AckWait time.Duration
}

// Run applies the catalog's changes until ctx ends, then returns nil. It waits for
// CatalogStream to exist, subscribes again when the consumer goes away, and catches up with
// the catalog after each subscription. The consumer delivers all the stream holds
// (DeliverAll), as earlier builds' durables do and JetStream cannot change: a bounded replay
// that changes nothing twice.
func (m *SeatMapper) Run(ctx context.Context) error {
	if m.Log == nil {
		m.Log = logging.Discard()
	}
	if m.Tracer == nil {
		m.Tracer = noop.NewTracerProvider().Tracer("inventory")
	}
	catchUp := &natsconn.CatchUp{Pass: catalogv1.Pass(m.Catalog, m.applyEvent, cannotLayOut, m.Log), Source: "the catalog",
		Report: m.Store.metrics.caughtUp, Log: m.Log}
	catchUp.Follow(ctx, m.JS, CatalogStream, jetstream.ConsumerConfig{
		Durable:       SeatMapConsumer,
		FilterSubject: catalogEventSubjects,
		DeliverPolicy: jetstream.DeliverAllPolicy, // kept for the durables of earlier builds
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cmp.Or(m.AckWait, 30*time.Second),
	}, func(msg jetstream.Msg) { m.handle(ctx, msg) }, natsconn.FollowOptions{RetryEvery: m.retryEvery(), Log: m.Log})
	return nil
}

// handle applies one change and acknowledges it as its outcome says.
func (m *SeatMapper) handle(ctx context.Context, msg jetstream.Msg) {
	ctx = natsconn.ExtractTrace(ctx, msg.Headers())
	ctx, span := m.Tracer.Start(ctx, "seat map from "+msg.Subject(), trace.WithSpanKind(trace.SpanKindConsumer))
	defer span.End()
	event, err := m.apply(ctx, msg.Data())
	switch {
	case err == nil:
		err = msg.Ack()
	case cannotLayOut(err):
		m.Log.ErrorContext(ctx, "no seat map for a catalog event inventory cannot lay out", "event", event, "subject", msg.Subject(), "error", err)
		err = msg.Term()
	case ctx.Err() != nil:
		return // shutting down: the server redelivers after AckWait
	default:
		m.Log.WarnContext(ctx, "seat map not stored; the change will be redelivered", "event", event, "error", err)
		err = msg.NakWithDelay(m.retryEvery())
	}
	if err != nil {
		m.Log.WarnContext(ctx, "acknowledge catalog change", "event", event, "error", err)
	}
}

// apply decodes a catalogv1.EventChange and applies its event (applyEvent). A payload that
// cannot be read is an Invalid problem, like a layout that cannot be stored.
func (m *SeatMapper) apply(ctx context.Context, payload []byte) (string, error) {
	var change catalogv1.EventChange
	if err := catalogChangeJSON.Unmarshal(payload, &change); err != nil {
		return "", &problem.Error{Code: problem.Invalid, Message: "unreadable catalog change", Err: err}
	}
	e := change.GetEvent()
	if e == nil {
		return "", problem.InvalidField("event", "the change %s carries no event", change.GetId())
	}
	return e.GetId(), m.applyEvent(ctx, e)
}

// applyEvent applies e's default layout and sale window at e's version, and logs what that
// did.
func (m *SeatMapper) applyEvent(ctx context.Context, e *catalogv1.Event) error {
	outcome, err := m.Store.ApplyCatalogLayout(ctx, e.GetId(), e.GetVersion(), CatalogLayout(e), CatalogSale(e))
	if err != nil {
		return err
	}
	level, what := slog.LevelInfo, "seat map from the catalog"
	switch outcome {
	case SyncCurrent, SyncDeclared:
		level = slog.LevelDebug // the usual answer to a title change, a repeat or a catch-up
	case SyncInUse:
		level, what = slog.LevelWarn, "the catalog changed the classes of an event with held or sold tickets: its seats stay as they are"
	}
	m.Log.Log(ctx, level, what, "event", e.GetId(), "outcome", outcome)
	return nil
}

// CatalogLayout is the default seat map of a catalog event: DefaultLayout of its ticket
// classes, a flash sale when the event is one.
func CatalogLayout(e *catalogv1.Event) Layout {
	classes := make([]TicketClass, 0, len(e.GetTicketClasses()))
	for _, c := range e.GetTicketClasses() {
		classes = append(classes, TicketClass{ID: c.GetId(), Seated: c.GetSeated(), Capacity: int(c.GetCapacity())})
	}
	l := DefaultLayout(classes)
	l.FlashSale = e.GetFlashSale()
	return l
}

// CatalogSale is when a catalog event's tickets may be held: from its on_sale_at until its
// starts_at. A timestamp the change lacks leaves that bound open (the catalog requires both;
// an older or foreign publisher may not send them), where reading it as the epoch would
// close the sale for good.
func CatalogSale(e *catalogv1.Event) SaleWindow {
	var w SaleWindow
	if t := e.GetOnSaleAt(); t != nil {
		w.Opens = t.AsTime()
	}
	if t := e.GetStartsAt(); t != nil {
		w.Starts = t.AsTime()
	}
	return w
}

// cannotLayOut reports whether err says an event can never be laid out (an id or classes
// inventory refuses): a catch-up passes such an event over, as the consumer terminates its
// change.
func cannotLayOut(err error) bool { return problem.CodeOf(err) == problem.Invalid }

func (m *SeatMapper) retryEvery() time.Duration { return cmp.Or(m.RetryEvery, time.Second) }
