package inventory

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"boxoffice.dev/platform/natsconn"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	"boxoffice.dev/services/catalog"
)

// TestSeatMapsCatchUpFromTheCatalog: an event the stream no longer holds (older than its
// retention, simulated by purging it) or never carried to inventory (NATS_URL unset) still
// gets its seat map, read back from the catalog when inventory starts.
func TestSeatMapsCatchUpFromTheCatalog(t *testing.T) {
	testkit.ForEachDatabaseURL(t, "inventory", func(t *testing.T, dbURL string) {
		for _, tt := range []struct {
			name, event string
			nats        bool // inventory follows the stream
		}{
			{"the stream lost the change", "evt-aged-out", true},
			{"no NATS: once at start", "evt-no-nats", false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				ns := testkit.StartNATSServer(t, nil)
				// No drain at shutdown: nothing balances over these processes.
				cat := testkit.RunProcess(t, catalog.Run, map[string]string{"NATS_URL": ns.ClientURL(), "DRAIN_DELAY": "0s"})
				createCatalogEvent(t, cat.HTTPURL, tt.event)
				purgeCatalogStream(t, ns.ClientURL(), tt.event)

				env := map[string]string{"CATALOG_GRPC_ADDR": cat.GRPCAddr, "DRAIN_DELAY": "0s"}
				if tt.nats {
					env["NATS_URL"] = ns.ClientURL()
				}
				if dbURL != "" {
					env["DATABASE_URL"] = dbURL
				}
				inv := testkit.RunProcess(t, Run, env)
				var m SeatMap
				testkit.Eventually(t, 10*time.Second, "inventory serves "+tt.event+"'s seats", func() bool {
					return do(t, http.MethodGet, inv.HTTPURL+"/v1/events/"+tt.event+"/seats", "", nil, &m) == http.StatusOK
				})
				if m.Counts.Total != 300 || len(m.GA) != 1 || m.GA[0].Total != 60 {
					t.Errorf("seat map of %s = %d tickets, GA %+v; want the catalog's 240 seats and 60 pista", tt.event, m.Counts.Total, m.GA)
				}
				series := `boxoffice_inventory_catalog_catchups_total{outcome="complete"}`
				if got := metricValue(t, inv.HTTPURL, series); got < 1 {
					t.Errorf("%s = %v, want at least 1", series, got)
				}
			})
		}
	})
}

// TestCatchUpNeverUndoesANewerChange: the stream and the catch-up may bring one event in
// either order; whichever comes last, the seat map is the newer version's.
func TestCatchUpNeverUndoesANewerChange(t *testing.T) {
	plateia := &catalogv1.TicketClass{Id: "plateia", Seated: true, Capacity: 40}
	balcao := &catalogv1.TicketClass{Id: "balcao", Seated: true, Capacity: 20}
	versions := map[int64][]*catalogv1.TicketClass{1: {plateia}, 2: {plateia, balcao}} // 40 seats, then 60
	tests := []struct {
		name              string
		streamV, catalogV int64
		streamFirst       bool // the stream's change is applied before the catch-up reads the catalog
	}{
		{"the stream's newer change before the catch-up's older one", 2, 1, true},
		{"the catch-up's newer event before the stream's older change", 1, 2, false},
	}
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, newClock())
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				event := fmt.Sprintf("evt-order-%d", i)
				streamEvent := catalogEvent(event, tt.streamV, versions[tt.streamV]...)
				catalogEvt := catalogEvent(event, tt.catalogV, versions[tt.catalogV]...)
				js := testkit.JetStream(t, testkit.StartNATSServer(t, nil).ClientURL())
				if _, err := natsconn.EnsureStream(ctx, js, CatalogStream, []string{catalogv1.StreamSubjects}); err != nil {
					t.Fatal(err)
				}
				release := make(chan struct{})
				lister := &pagedLister{pages: [][]*catalogv1.Event{{catalogEvt}, {}}, hold: release}
				if !tt.streamFirst {
					close(release)
				} else {
					publishChange(t, js, streamEvent)
				}
				mapper := &SeatMapper{JS: js, Catalog: lister, Store: s, RetryEvery: 50 * time.Millisecond}
				done := make(chan error, 1)
				go func() { done <- mapper.Run(ctx) }()
				defer func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("Run = %v, want nil at shutdown", err)
					}
				}()

				if tt.streamFirst {
					testkit.Eventually(t, 10*time.Second, "the stream's change applied", func() bool {
						return seatCount(t, s, event) == 60
					})
					close(release)
					testkit.Eventually(t, 10*time.Second, "the catch-up's pages applied", lister.done)
				} else {
					testkit.Eventually(t, 10*time.Second, "the catch-up's pages applied", lister.done)
					publishChange(t, js, streamEvent)
					testkit.Eventually(t, 10*time.Second, "the stream's change acknowledged", func() bool {
						c, err := js.Consumer(ctx, CatalogStream, SeatMapConsumer)
						if err != nil {
							return false
						}
						info, err := c.Info(ctx)
						return err == nil && info.AckFloor.Stream == 1
					})
				}
				if got := seatCount(t, s, event); got != 60 {
					t.Errorf("seats of %s = %d, want 60: version 2's, whatever the order", event, got)
				}
			})
		}
	})
}

// TestCatchUpWithoutNATS: with no stream to follow, Run catches up once and returns. It
// waits out a catalog that fails, reads every page, and passes over an event it cannot lay
// out rather than trying it forever.
func TestCatchUpWithoutNATS(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, newClock())
		ga := &catalogv1.TicketClass{Id: "pista", Capacity: 10}
		lister := &pagedLister{failFirst: 2, pages: [][]*catalogv1.Event{
			{catalogEvent("evt-page-1", 1, ga), catalogEvent("evt bad id", 1, ga)},
			{catalogEvent("evt-page-2", 3, ga)},
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := (&SeatMapper{Catalog: lister, Store: s}).Run(ctx); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if ctx.Err() != nil {
			t.Fatal("Run returned only when its context ended, want after one complete pass")
		}
		for _, event := range []string{"evt-page-1", "evt-page-2"} {
			if got := seatCount(t, s, event); got != 10 {
				t.Errorf("tickets of %s = %d, want 10", event, got)
			}
		}
		if calls := lister.callCount(); calls != 4 {
			t.Errorf("ListEvents calls = %d, want 4: two failures, then two pages", calls)
		}
	})
}

// pagedLister is a catalog listing pages as told: it fails its first failFirst calls, then
// serves pages in order (each token names the next page). The first page waits for hold to
// close, when set; done reports whether the last page was asked for, which EachEvent does
// only after applying every event before it.
type pagedLister struct {
	pages     [][]*catalogv1.Event
	failFirst int
	hold      chan struct{}

	mu    sync.Mutex
	calls int
	last  bool
}

var _ catalogv1.EventLister = (*pagedLister)(nil)

func (l *pagedLister) ListEvents(ctx context.Context, in *catalogv1.ListEventsRequest, _ ...grpc.CallOption) (*catalogv1.ListEventsResponse, error) {
	l.mu.Lock()
	l.calls++
	failing := l.calls <= l.failFirst
	l.mu.Unlock()
	if failing {
		return nil, problem.New(problem.Unavailable, "catalog is unavailable")
	}
	page := 0
	if tok := in.GetPage().GetPageToken(); tok != "" {
		page = int(tok[0] - '0')
	}
	if page == 0 && l.hold != nil {
		select {
		case <-l.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	res := &catalogv1.ListEventsResponse{Events: l.pages[page], Page: &commonv1.PageResponse{}}
	if page+1 < len(l.pages) {
		res.Page.NextPageToken = string(rune('0' + page + 1))
	} else {
		l.mu.Lock()
		l.last = true
		l.mu.Unlock()
	}
	return res, nil
}

func (l *pagedLister) done() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func (l *pagedLister) callCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// catalogEvent is version of a catalog event with classes, always on sale.
func catalogEvent(id string, version int64, classes ...*catalogv1.TicketClass) *catalogv1.Event {
	return &catalogv1.Event{Id: id, Title: id, Version: version, TicketClasses: classes}
}

// publishChange announces e on the catalog's stream as the catalog does.
func publishChange(t *testing.T, js jetstream.JetStream, e *catalogv1.Event) {
	t.Helper()
	b, err := protojson.Marshal(&catalogv1.EventChange{Id: e.GetId(), Type: "catalog.event.updated", Event: e})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "boxoffice.catalog.event.updated", b); err != nil {
		t.Fatal(err)
	}
}

// seatCount is how many tickets event's seat map has, 0 without one.
func seatCount(t *testing.T, s *Store, event string) int {
	t.Helper()
	m, err := s.SeatMap(context.Background(), event)
	if problem.CodeOf(err) == problem.NotFound {
		return 0
	}
	if err != nil {
		t.Fatalf("SeatMap(%s): %v", event, err)
	}
	return m.Counts.Total
}

// createCatalogEvent creates event through the catalog's admin API: 240 seats and 60
// standing, on sale.
func createCatalogEvent(t *testing.T, catalogURL, event string) {
	t.Helper()
	venue := map[string]any{"id": "ven-" + event, "name": "Sala " + event, "city": "Porto", "country": "PT", "capacity": 300}
	if code := do(t, http.MethodPost, catalogURL+"/v1/admin/venues", "", venue, nil); code != http.StatusCreated {
		t.Fatalf("POST venue = %d, want 201", code)
	}
	ev := map[string]any{"id": event, "title": "Concerto " + event, "venue_id": "ven-" + event,
		"starts_at":  time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339),
		"on_sale_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		"ticket_classes": []map[string]any{
			{"id": "plateia", "name": "Plateia", "price": map[string]any{"currency": "EUR", "minor": 4000}, "seated": true, "capacity": 240},
			{"id": "pista", "name": "Pista", "price": map[string]any{"currency": "EUR", "minor": 2500}, "capacity": 60},
		}}
	if code := do(t, http.MethodPost, catalogURL+"/v1/admin/events", "", ev, nil); code != http.StatusCreated {
		t.Fatalf("POST event %s = %d, want 201", event, code)
	}
}

// purgeCatalogStream waits until the catalog has announced event, then empties its stream,
// as if the announcement had aged out.
func purgeCatalogStream(t *testing.T, natsURL, event string) {
	t.Helper()
	js := testkit.JetStream(t, natsURL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stream jetstream.Stream
	testkit.Eventually(t, 10*time.Second, "the catalog announced "+event, func() bool {
		var err error
		if stream, err = js.Stream(ctx, CatalogStream); err != nil {
			return false
		}
		m, err := stream.GetLastMsgForSubject(ctx, "boxoffice.catalog.event.created")
		return err == nil && strings.Contains(string(m.Data), event)
	})
	if err := stream.Purge(ctx); err != nil {
		t.Fatalf("purge %s: %v", CatalogStream, err)
	}
}

// noCatalog is an address no catalog listens on, for a process whose test declares its seat
// maps itself: the default (127.0.0.1:9102) may be a catalog another run left, whose events
// the catch-up would lay out.
func noCatalog(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
}
