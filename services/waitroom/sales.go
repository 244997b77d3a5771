package waitroom

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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

// SaleFollower opens the queue (Queue.Open) of every flash sale the catalog creates or
// changes, until the queue TTL after the event starts: it is how the demo's flash sale and
// the playground's get a waiting room fans can join. An event that stops being a flash sale
// keeps its queue until that queue expires: fans already in it keep their places, and
// nothing is left to admit for once they are through. Set the fields, then call Run once.
//
// Delivery is at least once with explicit acks; opening is idempotent, so a redelivery is
// harmless. An unreadable change is terminated rather than redelivered forever; a failure
// that may pass (Redis away) is redelivered after RetryEvery.
type SaleFollower struct {
	JS    jetstream.JetStream // where the catalog publishes; required
	Queue *Queue              // opens the sales; required
	Log   *slog.Logger        // what was opened and what failed; nil discards
	// RetryEvery is the pause before looking again for a CatalogStream not there yet (the
	// waitroom started first) and before redelivering a failed change; 0 means 1s.
	RetryEvery time.Duration
}

// Run opens the catalog's flash sales until ctx ends, then returns nil. It waits for
// CatalogStream to exist and subscribes again when the consumer goes away.
func (f *SaleFollower) Run(ctx context.Context) error {
	if f.Log == nil {
		f.Log = logging.Discard()
	}
	natsconn.Follow(ctx, f.JS, CatalogStream, jetstream.ConsumerConfig{
		Durable:       SaleConsumer,
		FilterSubject: catalogEventSubjects,
		// A new consumer starts at the stream's first change: flash sales the catalog
		// created before the waitroom ever ran open too.
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
	}, func(msg jetstream.Msg) { f.handle(ctx, msg) }, natsconn.FollowOptions{RetryEvery: f.retryEvery(), Log: f.Log})
	return nil
}

// handle applies one change and acknowledges it as its outcome says.
func (f *SaleFollower) handle(ctx context.Context, msg jetstream.Msg) {
	event, opened, err := f.apply(ctx, msg.Data())
	switch {
	case err == nil:
		if opened {
			f.Log.InfoContext(ctx, "flash sale open to join", "event", event)
		}
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

// apply decodes a catalogv1.EventChange and opens its event's sale when it is a flash sale,
// reporting whether that sale is open (a sale whose event started more than the queue TTL
// ago stays closed). A payload that cannot be read is an Invalid problem.
func (f *SaleFollower) apply(ctx context.Context, payload []byte) (event string, opened bool, err error) {
	var change catalogv1.EventChange
	// Fields a newer catalog added are skipped: the services need not deploy in lockstep.
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(payload, &change); err != nil {
		return "", false, &problem.Error{Code: problem.Invalid, Message: "unreadable catalog change", Err: err}
	}
	e := change.GetEvent()
	if e == nil {
		return "", false, problem.InvalidField("event", "the change %s carries no event", change.GetId())
	}
	if !e.GetFlashSale() {
		return e.GetId(), false, nil
	}
	var until time.Time // no start time: the queue TTL from now
	if e.GetStartsAt() != nil {
		until = e.GetStartsAt().AsTime().Add(f.Queue.queueTTL())
	}
	opened, err = f.Queue.Open(ctx, e.GetId(), until)
	return e.GetId(), opened, err
}

func (f *SaleFollower) retryEvery() time.Duration { return cmp.Or(f.RetryEvery, time.Second) }
