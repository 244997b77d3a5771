package search

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protojson"

	"boxoffice.dev/platform/natsconn"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

// The catalog's stream and the subjects of its event changes; the catalog owns the stream.
const (
	catalogStream  = catalogv1.Stream
	eventSubjects  = catalogv1.EventSubjects
	callTimeout    = 5 * time.Second
	consumerIdle   = time.Hour // the server deletes the durable of an instance gone this long
	maxRetryPause  = 5 * time.Second
	firstRetryWait = 100 * time.Millisecond
)

// Feeder keeps an Index in step with the catalog: it follows the change events, rebuilds
// from the catalog, and then reports Ready.
type Feeder struct {
	Index   *Index
	Catalog catalogv1.EventLister
	// JS and Consumer name this instance's durable consumer; nil JS means no events are
	// followed and the index is only built once (NATS_URL unset).
	JS       jetstream.JetStream
	Consumer string
	// Log receives progress and failures; nil discards them.
	Log *slog.Logger

	ready atomic.Bool
}

// Ready reports whether the first rebuild is done; until then results would be incomplete.
func (f *Feeder) Ready() bool { return f.ready.Load() }

// Run follows the catalog's events, then rebuilds the index from the catalog, retrying either
// step until it succeeds, and keeps following until ctx is done; it returns nil then. Both
// may bring one event, in any order: Index.Put keeps the highest version. Each new set-up of
// the consumer rebuilds again while the index keeps serving, and stays ready. Why a rebuild,
// not a replay: docs/adr/0005-nats-jetstream-for-events.md, "Following the catalog".
func (f *Feeder) Run(ctx context.Context) error {
	if f.Log == nil {
		f.Log = slog.New(slog.DiscardHandler)
	}
	put := func(_ context.Context, e *catalogv1.Event) error {
		f.Index.Put(DocFrom(e))
		return nil
	}
	rebuild := &natsconn.CatchUp{
		Pass:   catalogv1.Pass(f.Catalog, put, nil, f.Log),
		Source: "the catalog",
		Report: func(_ context.Context, _ int, err error) {
			if err == nil {
				f.ready.Store(true)
			}
		},
		Log: f.Log,
	}
	// Each instance has its own consumer, since each has its own index: instances sharing
	// one would split the events between them. It starts at the stream's end: earlier events
	// are in the rebuild that follows each set-up. The consumer is stopped before Run returns.
	rebuild.Follow(ctx, f.JS, catalogStream, jetstream.ConsumerConfig{
		Durable:           f.Consumer,
		FilterSubject:     eventSubjects,
		DeliverPolicy:     jetstream.DeliverNewPolicy,
		AckPolicy:         jetstream.AckExplicitPolicy,
		InactiveThreshold: consumerIdle,
	}, func(m jetstream.Msg) { f.apply(ctx, m) }, natsconn.FollowOptions{
		RetryEvery: firstRetryWait, MaxRetryEvery: maxRetryPause, SetupTimeout: callTimeout, Log: f.Log,
	})
	if f.JS == nil {
		<-ctx.Done() // built once: serve it until the end
	}
	return nil
}

func (f *Feeder) apply(ctx context.Context, m jetstream.Msg) {
	ctx = natsconn.ExtractTrace(ctx, nats.Header(m.Headers()))
	var change catalogv1.EventChange
	if err := protojson.Unmarshal(m.Data(), &change); err != nil || change.GetEvent() == nil {
		// A message that cannot be read never will be: drop it rather than redeliver it forever.
		f.Log.ErrorContext(ctx, "unreadable catalog event", "subject", m.Subject(), "error", err)
		_ = m.Term()
		return
	}
	f.Index.Put(DocFrom(change.GetEvent()))
	if err := m.Ack(); err != nil {
		f.Log.WarnContext(ctx, "ack catalog event", "id", change.GetId(), "error", err)
	}
}

// ConsumerName is the durable consumer of one instance: stable across its restarts, distinct
// from other instances' (two may run on one host, on different ports).
func ConsumerName(host, httpAddr string) string {
	name := "search-" + host + "-" + httpAddr[strings.LastIndex(httpAddr, ":")+1:]
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
}
