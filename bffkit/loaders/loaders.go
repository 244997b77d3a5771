// Package loaders batches the BFFs' reads of events, venues and availability, so a page of
// N events costs a constant number of service calls, not N of each.
//
// A Loaders lives for one GraphQL request (Middleware puts a fresh one in each request's
// context): resolvers running concurrently for the items of a list each ask for one key,
// and every key asked within Wait of the first goes to the service in one batch call
// (catalog's BatchGetEvents and BatchGetVenues, inventory's BatchGetAvailability). Keys are
// cached for the rest of the request, never longer: a cache shared across requests would
// need invalidation, and availability changes by the second.
//
// The price of batching is Wait, added once per level of the query that loads; a few
// milliseconds against a network round trip per item saved.
package loaders

import (
	"context"
	"net/http"
	"time"

	"github.com/vikstrous/dataloadgen"
	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/platform/problem"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// The services' batch limits: catalog takes 500 ids a call, inventory 100.
const (
	maxCatalogBatch   = 500
	maxInventoryBatch = 100
)

// Options tunes the loaders. The zero value waits 5ms and records no spans.
type Options struct {
	// Wait is how long a batch collects keys after the first; 0 = 5ms.
	Wait time.Duration
	// TracerProvider records a span per load and per batch; nil = none.
	TracerProvider trace.TracerProvider
}

// Loaders holds one request's loaders. Safe for the concurrent resolvers of that request.
type Loaders struct {
	Events       *dataloadgen.Loader[string, *catalogv1.Event]
	Venues       *dataloadgen.Loader[string, *catalogv1.Venue]
	Availability *dataloadgen.Loader[string, *inventoryv1.Availability]
}

// New returns loaders reading from catalog and inventory. A missing event or venue loads as a
// not_found problem for its key alone; a failed batch call fails every key in it.
func New(catalog catalogv1.CatalogClient, inventory inventoryv1.InventoryClient, o Options) *Loaders {
	opts := []dataloadgen.Option{dataloadgen.WithWait(o.Wait)}
	if o.Wait == 0 {
		opts[0] = dataloadgen.WithWait(5 * time.Millisecond)
	}
	if o.TracerProvider != nil {
		opts = append(opts, dataloadgen.WithTracer(o.TracerProvider.Tracer("boxoffice.dev/bffkit/loaders")))
	}
	return &Loaders{
		Events: dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([]*catalogv1.Event, []error) {
			resp, err := catalog.BatchGetEvents(ctx, &catalogv1.BatchGetEventsRequest{Ids: ids})
			return align(ids, resp.GetEvents(), (*catalogv1.Event).GetId, "event", err)
		}, append(opts, dataloadgen.WithBatchCapacity(maxCatalogBatch))...),
		Venues: dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([]*catalogv1.Venue, []error) {
			resp, err := catalog.BatchGetVenues(ctx, &catalogv1.BatchGetVenuesRequest{Ids: ids})
			return align(ids, resp.GetVenues(), (*catalogv1.Venue).GetId, "venue", err)
		}, append(opts, dataloadgen.WithBatchCapacity(maxCatalogBatch))...),
		Availability: dataloadgen.NewLoader(func(ctx context.Context, ids []string) ([]*inventoryv1.Availability, []error) {
			resp, err := inventory.BatchGetAvailability(ctx, &inventoryv1.BatchGetAvailabilityRequest{EventIds: ids})
			return align(ids, resp.GetAvailability(), (*inventoryv1.Availability).GetEventId, "availability of event", err)
		}, append(opts, dataloadgen.WithBatchCapacity(maxInventoryBatch))...),
	}
}

// align puts found in the order of ids, as dataloadgen wants: the value or an error for each
// key, by position.
func align[V any](ids []string, found []V, id func(V) string, what string, err error) ([]V, []error) {
	values, errs := make([]V, len(ids)), make([]error, len(ids))
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return values, errs
	}
	byID := make(map[string]V, len(found))
	for _, v := range found {
		byID[id(v)] = v
	}
	for i, key := range ids {
		v, ok := byID[key]
		if !ok {
			errs[i] = problem.New(problem.NotFound, "no %s %s", what, key)
			continue
		}
		values[i] = v
	}
	return values, errs
}

type loadersKey struct{}

// Middleware gives every request fresh loaders over catalog and inventory.
func Middleware(catalog catalogv1.CatalogClient, inventory inventoryv1.InventoryClient, o Options) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := context.WithValue(r.Context(), loadersKey{}, New(catalog, inventory, o))
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// FromContext returns the request's loaders; nil when ctx did not come through Middleware.
func FromContext(ctx context.Context) *Loaders {
	l, _ := ctx.Value(loadersKey{}).(*Loaders)
	return l
}
