package catalogv1

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
)

// How the catalog's events are read back, for the services that follow Stream: the largest
// page ListEvents serves, and a bound on one call (a catalog that hangs fails the pass rather
// than holding it). Written by hand beside the generated code, like stream.go: every
// follower reads the catalog the same way.
const (
	ListPageSize    = 100
	ListCallTimeout = 5 * time.Second
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
// which is why its consumer is set up before the walk (natsconn.CatchUp).
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

// Pass returns a catch-up pass over the catalog for a follower of Stream
// (natsconn.CatchUp.Pass): it hands apply every event the catalog lists, as if each were a
// change arriving on the stream, and returns how many it applied. An error of apply fails
// the pass, unless passOver (nil: none) reports it as one no later pass would fix (an event
// the follower can never apply): that event is logged on log (nil: discarded) and passed
// over, where retrying would never finish.
func Pass(c EventLister, apply func(context.Context, *Event) error, passOver func(error) bool, log *slog.Logger) func(context.Context) (int, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context) (int, error) {
		return EachEvent(ctx, c, func(e *Event) error {
			err := apply(ctx, e)
			if err != nil && passOver != nil && passOver(err) {
				log.ErrorContext(ctx, "catalog event passed over", "event", e.GetId(), "error", err)
				return nil
			}
			return err
		})
	}
}
