package loaders

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"boxoffice.dev/bffkit/servicetest"
	"boxoffice.dev/platform/problem"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

func newLoaders(t *testing.T, svc *servicetest.Services) *Loaders {
	t.Helper()
	dial := func(addr string) *grpc.ClientConn {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	return New(catalogv1.NewCatalogClient(dial(svc.Catalog.Addr)), inventoryv1.NewInventoryClient(dial(svc.Inventory.Addr)), Options{Wait: 10 * time.Millisecond})
}

// loadAll loads every id at once, from a goroutine each, as gqlgen resolves a list's items.
func loadAll[V any](load func(context.Context, string) (V, error), ids []string) ([]V, []error) {
	values, errs := make([]V, len(ids)), make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { values[i], errs[i] = load(context.Background(), id) })
	}
	wg.Wait()
	return values, errs
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("evt-%03d", i+1)
	}
	return out
}

func TestLoadersBatch(t *testing.T) {
	svc := servicetest.Start(t, 150)
	l := newLoaders(t, svc)

	keys := append(ids(50), "evt-404")
	events, errs := loadAll(l.Events.Load, keys)
	for i, key := range keys[:50] {
		if errs[i] != nil || events[i].GetId() != key {
			t.Errorf("Events.Load(%s) = %v, %v", key, events[i].GetId(), errs[i])
		}
	}
	if got := problem.CodeOf(errs[50]); got != problem.NotFound {
		t.Errorf("Events.Load(evt-404) code = %q, want not_found for that key alone", got)
	}
	venues, errs := loadAll(l.Venues.Load, []string{"ven-1", "ven-2", "ven-1"})
	if errs[0] != nil || errs[1] != nil || venues[2].GetName() != venues[0].GetName() {
		t.Errorf("Venues.Load = %v, %v", venues, errs)
	}
	avail, errs := loadAll(l.Availability.Load, ids(150))
	if errs[149] != nil || avail[149].GetEventId() != "evt-150" {
		t.Errorf("Availability.Load(evt-150) = %v, %v", avail[149], errs[149])
	}

	calls := svc.Calls()
	for _, tc := range []struct {
		method string
		want   int
	}{
		{"/boxoffice.catalog.v1.Catalog/BatchGetEvents", 1},
		{"/boxoffice.catalog.v1.Catalog/BatchGetVenues", 1},
		{"/boxoffice.inventory.v1.Inventory/BatchGetAvailability", 2}, // 150 ids, 100 a call
	} {
		if got := calls[tc.method]; got != tc.want {
			t.Errorf("%s called %d times, want %d", tc.method, got, tc.want)
		}
	}

	// The cache lasts the loaders' life: asking again costs nothing.
	before := svc.Total()
	if _, err := l.Events.Load(context.Background(), "evt-001"); err != nil || svc.Total() != before {
		t.Errorf("Events.Load(evt-001) again = %v with %d more calls, want a cached answer", err, svc.Total()-before)
	}
}

func TestLoadersWhenTheServiceIsDown(t *testing.T) {
	svc := servicetest.Start(t, 3)
	l := newLoaders(t, svc)
	svc.Inventory.Stop()
	_, errs := loadAll(l.Availability.Load, ids(3))
	for i, err := range errs {
		if err == nil {
			t.Errorf("Availability.Load(%s) with inventory down = nil error, want one", ids(3)[i])
		}
	}
	if _, err := l.Events.Load(context.Background(), "evt-001"); err != nil {
		t.Errorf("Events.Load with only inventory down = %v, want the event", err)
	}
}
