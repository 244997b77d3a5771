package catalogv1

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
)

// How the catalog's events are read back, for the services that follow Stream: the largest
// page ListEvents serves, a bound on one call (a catalog that hangs fails the pass rather
// than holding it), and the pauses between failed passes. Written by hand beside the
// generated code, like stream.go: every follower reads the catalog the same way.
const (
	ListPageSize    = 100
	ListCallTimeout = 5 * time.Second
	firstRetryPause = 100 * time.Millisecond
	maxRetryPause   = 5 * time.Second
)

// EventLister pages through the catalog's events; CatalogClient is one. Followers take this
// rather than the whole client, so a test can list what it likes.
type EventLister interface {
	ListEvents(ctx context.Context, in *ListEventsRequest, opts ...grpc.CallOption) (*ListEventsResponse, error)
}

var _ EventLister = CatalogClient(nil)

// EachEvent calls fn with every event the catalog lists, ListPageSize a page, each call
// bounded by ListCallTimeout, and returns how many events fn took. It stops at the first
// error, the catalog's or fn's.
//
// The pages are a walk by position, not a snapshot: an event added or moved while it walks
// may be missed or seen twice. A follower of Stream gets such a change from the stream too,
// which is why its consumer is set up before the walk (see CatchUp).
func EachEvent(ctx context.Context, c EventLister, fn func(*Event) error) (int, error) {
	n, token := 0, ""
	for {
		cctx, cancel := context.WithTimeout(ctx, ListCallTimeout)
		res, err := c.ListEvents(cctx, &ListEventsRequest{
			Page: &commonv1.PageRequest{PageSize: ListPageSize, PageToken: token},
		})
		cancel()
		if err != nil {
			return n, fmt.Errorf("list catalog events after %d: %w", n, err)
		}
		for _, e := range res.GetEvents() {
			if err := fn(e); err != nil {
				return n, fmt.Errorf("event %s: %w", e.GetId(), err)
			}
			n++
		}
		if token = res.GetPage().GetNextPageToken(); token == "" {
			return n, nil
		}
	}
}

// CatchUp brings a follower of Stream level with the catalog: it hands Apply every event the
// catalog lists, as if each were a change arriving on the stream. The stream keeps changes
// for a while only (natsconn.StreamMaxAge and StreamMaxBytes), and a consumer created later,
// or again after NATS lost its store or the consumer was deleted, has nothing of what came
// before; the catalog still has every event.
//
// Ask for a pass each time the follower's consumer is set up, and run Run beside the
// follower: Follow does both. The consumer comes first: a change made during the pass
// arrives on the stream, one made before is in the pages. Both paths may bring the same
// event, in any order, so Apply must be idempotent and must never let an older version of an
// event undo a newer one.
//
// Set the fields, then call Follow, Run or Once from one goroutine; Ask is safe from any.
type CatchUp struct {
	// Catalog lists the events. Required.
	Catalog EventLister
	// Apply applies one event. An error fails the pass, and the next starts again from the
	// first page after a pause, unless PassOver says otherwise. Required.
	Apply func(context.Context, *Event) error
	// PassOver, if set, reports whether an error of Apply is one no later pass would fix (an
	// event the follower can never apply): that event is logged and passed over, and the
	// pass goes on, where retrying would never finish. nil passes nothing over.
	PassOver func(error) bool
	// Report, if set, is called after each pass with how many events it applied and its
	// error, nil once every event is applied: for a follower to count passes or turn ready.
	// A pass cut short by ctx ending is not reported.
	Report func(ctx context.Context, applied int, err error)
	// Log receives each pass's outcome; nil discards them.
	Log *slog.Logger

	once  sync.Once
	asked chan struct{}
}

// Ask requests a pass from Run and returns at once. Asks made while a pass waits to start
// make one pass, and an Ask during a pass makes one more after it: each set-up of the
// consumer is followed by a whole pass.
func (c *CatchUp) Ask() {
	select {
	case c.pending() <- struct{}{}:
	default:
	}
}

// Follow runs follow, a loop setting up and consuming the follower's consumer until ctx
// ends (natsconn.Follow), with Ask as what it calls after each set-up
// (natsconn.FollowOptions.Subscribed), and makes a pass for each Ask. It returns once ctx
// has ended and follow has returned.
func (c *CatchUp) Follow(ctx context.Context, follow func(subscribed func())) {
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		follow(c.Ask)
	}()
	c.Run(ctx)
	<-followed
}

// Run makes a pass (Once) for every Ask until ctx ends.
func (c *CatchUp) Run(ctx context.Context) {
	for {
		select {
		case <-c.pending():
		case <-ctx.Done():
			return
		}
		if _, err := c.Once(ctx); err != nil {
			return
		}
	}
}

// Once makes passes until one applies every event, pausing after each failure (100ms, then
// twice as long each time, up to 5s), and returns how many events that pass applied. It
// gives up only when ctx ends, with ctx's error: a follower started before the catalog waits
// for it.
func (c *CatchUp) Once(ctx context.Context) (int, error) {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wait := firstRetryPause
	for {
		n, err := EachEvent(ctx, c.Catalog, func(e *Event) error {
			err := c.Apply(ctx, e)
			if err != nil && c.PassOver != nil && c.PassOver(err) {
				log.ErrorContext(ctx, "catalog event passed over", "event", e.GetId(), "error", err)
				return nil
			}
			return err
		})
		if err != nil && ctx.Err() != nil {
			return n, ctx.Err()
		}
		if c.Report != nil {
			c.Report(ctx, n, err)
		}
		if err == nil {
			log.InfoContext(ctx, "caught up with the catalog", "events", n)
			return n, nil
		}
		log.WarnContext(ctx, "catch up with the catalog", "error", err, "applied", n, "retry_in", wait)
		if err := sleep(ctx, wait); err != nil {
			return n, err
		}
		wait = min(2*wait, maxRetryPause)
	}
}

// pending is the channel of Asks, made on first use so that the zero CatchUp needs no
// constructor; it holds one Ask, all a pass needs.
func (c *CatchUp) pending() chan struct{} {
	c.once.Do(func() { c.asked = make(chan struct{}, 1) })
	return c.asked
}

// sleep pauses for d, or until ctx ends, and then returns ctx's error.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
