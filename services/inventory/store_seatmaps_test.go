package inventory

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// Layouts as DefaultLayout makes them from a catalog event's classes.
var (
	hall40   = DefaultLayout([]TicketClass{{"plateia", true, 40}})                                       // A: 2 rows of 20
	hall60   = DefaultLayout([]TicketClass{{"plateia", true, 40}, {"balcao", true, 20}})                 // A, then B: 1 row of 20
	hallGA   = DefaultLayout([]TicketClass{{"plateia", true, 40}, {"pista", false, 10}})                 // A and a GA counter
	flash40  = withFlash(hall40)                                                                         // hall40, holds need a pass
	declared = Layout{Sections: []SectionLayout{{ID: "PIT", Class: "plateia", Rows: 1, SeatsPerRow: 5}}} // an admin's own
)

func withFlash(l Layout) Layout { l.FlashSale = true; return l }

// apply is one catalog change as the consumer makes it, of an event always on sale; it fails
// the test on an error.
func apply(t *testing.T, s *Store, event string, version int64, l Layout) Sync {
	t.Helper()
	return applySale(t, s, event, version, l, SaleWindow{})
}

// applySale is apply of an event on sale in sale.
func applySale(t *testing.T, s *Store, event string, version int64, l Layout, sale SaleWindow) Sync {
	t.Helper()
	got, err := s.ApplyCatalogLayout(context.Background(), event, version, l, sale)
	if err != nil {
		t.Fatalf("ApplyCatalogLayout(%s, v%d): %v", event, version, err)
	}
	return got
}

func TestApplyCatalogLayout(t *testing.T) {
	type step struct {
		version int64
		layout  Layout
		want    Sync
	}
	tests := []struct {
		name  string
		put   *Layout // an admin's map declared before the steps
		hold  bool    // a fan holds A-1-1 after the first step
		steps []step
		// What the map is after the steps.
		wantTotal int
		wantFlash bool
		wantHeld  int
	}{
		{name: "created when missing", steps: []step{{1, hall40, SyncCreated}},
			wantTotal: 40},
		{name: "a redelivery changes nothing", steps: []step{{1, hall40, SyncCreated}, {1, hall40, SyncCurrent}},
			wantTotal: 40},
		{name: "a change that does not touch the classes", steps: []step{{1, hall40, SyncCreated}, {2, hall40, SyncCurrent}},
			wantTotal: 40},
		{name: "new classes re-lay an unused map", steps: []step{{1, hall40, SyncCreated}, {2, hall60, SyncReplaced}},
			wantTotal: 60},
		{name: "GA classes too", steps: []step{{1, hall40, SyncCreated}, {2, hallGA, SyncReplaced}},
			wantTotal: 50},
		{name: "an older change arriving late is ignored", steps: []step{{2, hall60, SyncCreated}, {1, hall40, SyncCurrent}},
			wantTotal: 60},
		{name: "a flash sale from the start", steps: []step{{1, flash40, SyncCreated}},
			wantTotal: 40, wantFlash: true},
		{name: "a redelivery does not reset a map with holds", hold: true,
			steps:     []step{{1, hall40, SyncCreated}, {1, hall40, SyncCurrent}, {2, hall40, SyncCurrent}},
			wantTotal: 40, wantHeld: 1},
		{name: "new classes never move held seats", hold: true,
			steps:     []step{{1, hall40, SyncCreated}, {2, hall60, SyncInUse}, {3, hall60, SyncInUse}},
			wantTotal: 40, wantHeld: 1},
		{name: "the flash-sale flag follows the catalog even with holds", hold: true,
			steps:     []step{{1, hall40, SyncCreated}, {2, flash40, SyncUpdated}},
			wantTotal: 40, wantFlash: true, wantHeld: 1},
		{name: "with held seats the flag follows, the seats stay", hold: true,
			steps:     []step{{1, hall40, SyncCreated}, {2, withFlash(hall60), SyncInUse}},
			wantTotal: 40, wantFlash: true, wantHeld: 1},
		{name: "an admin's map wins over the catalog's classes", put: &declared,
			steps:     []step{{1, hall40, SyncDeclared}, {2, hall60, SyncDeclared}},
			wantTotal: 5},
	}
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, newClock())
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				event := fmt.Sprintf("evt-sync-%02d", i)
				if tt.put != nil {
					putSeatMap(t, s, event, *tt.put)
				}
				for j, st := range tt.steps {
					if got := apply(t, s, event, st.version, st.layout); got != st.want {
						t.Errorf("step %d: ApplyCatalogLayout(v%d) = %s, want %s", j+1, st.version, got, st.want)
					}
					if j == 0 && tt.hold {
						if _, err := s.PlaceHold(context.Background(), HoldRequest{EventID: event, Account: "acc-1", Seats: []string{"A-1-1"}}); err != nil {
							t.Fatalf("PlaceHold: %v", err)
						}
					}
				}
				m, err := s.SeatMap(context.Background(), event)
				if err != nil {
					t.Fatalf("SeatMap: %v", err)
				}
				if m.Counts.Total != tt.wantTotal || m.FlashSale != tt.wantFlash || m.Counts.Held != tt.wantHeld {
					t.Errorf("seat map = %d tickets, %d held, flash sale %v; want %d, %d, %v",
						m.Counts.Total, m.Counts.Held, m.FlashSale, tt.wantTotal, tt.wantHeld, tt.wantFlash)
				}
			})
		}
	})
}

// TestApplyCatalogLayoutThenDeclared: the default map is replaced by an admin's while
// unused, and from then on the catalog's classes no longer touch it.
func TestApplyCatalogLayoutThenDeclared(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, newClock())
		apply(t, s, "evt-1", 1, hall40)
		putSeatMap(t, s, "evt-1", declared)
		if got := apply(t, s, "evt-1", 2, hall60); got != SyncDeclared {
			t.Errorf("ApplyCatalogLayout after PutSeatMap = %s, want %s", got, SyncDeclared)
		}
		if m, err := s.SeatMap(context.Background(), "evt-1"); err != nil || m.Counts.Total != 5 || m.Sections[0].ID != "PIT" {
			t.Errorf("SeatMap = %+v, %v; want the admin's 5 seats in PIT", m.Counts, err)
		}
	})
}

func TestApplyCatalogLayoutRefusesWhatCannotBeStored(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, newClock())
		tests := []struct {
			name, event string
			layout      Layout
			field       string
		}{
			{"no classes", "evt-1", DefaultLayout(nil), "sections"},
			{"a bad event id", "evt 1", hall40, "event.id"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := s.ApplyCatalogLayout(context.Background(), tt.event, 1, tt.layout, SaleWindow{})
				assertField(t, "ApplyCatalogLayout", err, tt.field)
				if _, err := s.SeatMap(context.Background(), tt.event); problem.CodeOf(err) != problem.NotFound {
					t.Errorf("SeatMap(%s) after a refused layout = %v, want not found", tt.event, err)
				}
			})
		}
	})
}

// TestApplyCatalogLayoutConcurrently has two Stores (two replicas) apply the same changes at
// once, as redeliveries racing each other: one creates the map, every other call finds it, and
// the seats exist once.
func TestApplyCatalogLayoutConcurrently(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		clk := newClock()
		stores := []*Store{newStore(t, db, clk), newStore(t, secondHandle(t, db), clk)}
		const calls = 8
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			results = map[Sync]int{}
		)
		for i := range calls {
			wg.Go(func() {
				got, err := stores[i%2].ApplyCatalogLayout(context.Background(), "evt-race", 1, hall60, SaleWindow{})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("ApplyCatalogLayout: %v", err)
				}
				results[got]++
			})
		}
		wg.Wait()
		if results[SyncCreated] != 1 || results[SyncCurrent] != calls-1 {
			t.Errorf("outcomes = %v, want 1 created and %d current", results, calls-1)
		}
		var seats int
		if err := db.QueryRow(db.Rebind(`SELECT count(*) FROM seats WHERE event_id = ?`), "evt-race").Scan(&seats); err != nil || seats != 60 {
			t.Errorf("seats of evt-race = %d, %v; want 60", seats, err)
		}
	})
}
