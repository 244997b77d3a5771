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
// shares. The server hands each change to one of them, as a work queue: the effect lands in
// the database all replicas share, so one replica applying it is enough, and sharing spreads
// the work. Search does the opposite, one consumer per instance, because each of its
// instances keeps an index of its own that must see every change.
const SeatMapConsumer = "inventory-seatmaps"

// catalogChangeJSON reads the catalog's payloads, skipping fields a newer catalog added, so
// the two services need not be deployed in lockstep.
var catalogChangeJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// SeatMapper lays out the default seat map (DefaultLayout) of every event the catalog has,
// creates or changes, and keeps when its tickets are on sale (CatalogSale), as
// Store.ApplyCatalogLayout decides. It is what gives demo events their seat maps in every
// run mode: the catalog seeds them and announces each one. Set the fields, then call Run
// once.
//
// It learns events two ways: from the changes on CatalogStream, and by reading every event
// back from the catalog (natsconn.CatchUp) each time its consumer is set up. The stream
// keeps changes for natsconn.StreamMaxAge at most, so a consumer new to it (a first
// deployment, one deleted, a NATS that lost its store, inventory down for longer) would
// never see an event created before: the catalog still lists it. Both ways may bring the
// same event, in any order; ApplyCatalogLayout keeps the highest version.
//
// Delivery is at least once with explicit acks: a change is acknowledged only after its
// effect is committed, so a crash in between redelivers it, and ApplyCatalogLayout makes
// the repeat a no-op. A change that can never be applied (an unreadable payload, classes
// inventory cannot lay out) is terminated rather than redelivered forever; a failure that
// may pass (the database away) is redelivered after RetryEvery. A catch-up that fails (the
// catalog or the database away) starts again after a pause, until it completes.
//
// Readiness does not wait for the catch-up: holds and seat maps are served from the
// database, which keeps every map laid out before, and every replica catches up at once, so
// waiting would take them all out of rotation while the catalog is down. Until the first
// catch-up completes, only an event never laid out before answers 404. Its outcome is logged
// and counted (boxoffice.inventory.catalog_catchups).
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
// CatalogStream to exist, and subscribes again when the consumer goes away (deleted with its
// stream, say), so the process outlives the catalog's restarts and redeployments; after each
// subscription it catches up with the catalog.
//
// The consumer delivers all the stream holds when it is first made (DeliverAll), although
// the catch-up also brings every event. The durable is shared, and one made by an earlier
// build already has that policy, which CreateOrUpdateConsumer refuses to change: switching
// to DeliverNew would need a new durable name, leaving the old one on the server for good
// and, during a rolling update, both applying every change. Replaying what the stream holds
// costs a bounded pass (StreamMaxAge, StreamMaxBytes) that changes nothing twice.
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
		DeliverPolicy: jetstream.DeliverAllPolicy, // see above: kept for the durables of earlier builds
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
