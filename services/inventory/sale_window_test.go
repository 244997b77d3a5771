package inventory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// saleStart is when the tests' clocks start; their events go on sale an hour later and
// start a day later.
var (
	saleStart = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	tomorrow  = SaleWindow{Opens: saleStart.Add(time.Hour), Starts: saleStart.Add(24 * time.Hour)}
)

func TestSaleWindowCheck(t *testing.T) {
	opens, starts := tomorrow.Opens, tomorrow.Starts
	tests := []struct {
		name       string
		w          SaleWindow
		at         time.Time
		wantDetail string // "" = on sale
	}{
		{"zero window, any time", SaleWindow{}, opens.Add(-time.Hour), ""},
		{"zero window, long after", SaleWindow{}, starts.Add(1000 * time.Hour), ""},
		{"before on_sale_at", tomorrow, opens.Add(-time.Millisecond), "the sale opens at 2026-06-01T10:00:00Z"},
		{"at on_sale_at", tomorrow, opens, ""},
		{"after on_sale_at", tomorrow, opens.Add(time.Minute), ""},
		{"just before starts_at", tomorrow, starts.Add(-time.Millisecond), ""},
		{"at starts_at", tomorrow, starts, "has started"},
		{"after starts_at", tomorrow, starts.Add(time.Hour), "has started"},
		{"no on_sale_at, started", SaleWindow{Starts: starts}, starts, "has started"},
		{"no starts_at, before the sale", SaleWindow{Opens: opens}, opens.Add(-time.Hour), "the sale opens at"},
		{"an opening within a second", SaleWindow{Opens: opens.Add(250 * time.Millisecond)}, opens, "the sale opens at 2026-06-01T10:00:00.25Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.w.Check(tt.at, "evt-1")
			switch {
			case tt.wantDetail == "" && err != nil:
				t.Errorf("Check(%s) = %v, want on sale", tt.at.Format(time.RFC3339Nano), err)
			case tt.wantDetail != "" && (problem.CodeOf(err) != problem.Unprocessable || !strings.Contains(err.Error(), tt.wantDetail)):
				t.Errorf("Check(%s) = %v, want an unprocessable problem saying %q", tt.at.Format(time.RFC3339Nano), err, tt.wantDetail)
			}
		})
	}
}

// TestPlaceHoldInSaleWindow: an event the catalog puts on sale at 10:00 and starts the next
// day is held (seated and GA alike) only in between, whatever the engine; a refused hold
// claims nothing.
func TestPlaceHoldInSaleWindow(t *testing.T) {
	tests := []struct {
		name       string
		at         time.Duration // after saleStart
		wantDetail string        // "" = held
	}{
		{"before on_sale_at", 59 * time.Minute, "not on sale yet: the sale opens at 2026-06-01T10:00:00Z"},
		{"a millisecond before on_sale_at", time.Hour - time.Millisecond, "the sale opens at"},
		{"at on_sale_at", time.Hour, ""},
		{"after on_sale_at", 2 * time.Hour, ""},
		{"at starts_at", 24 * time.Hour, "has started"},
		{"after starts_at", 25 * time.Hour, "has started"},
	}
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				clk := testkit.NewClock(saleStart, 0)
				s := newStore(t, db, clk)
				event := fmt.Sprintf("evt-window-%02d", i)
				applySale(t, s, event, 1, hallGA, tomorrow)
				clk.Advance(tt.at)
				for _, req := range []HoldRequest{
					{EventID: event, Account: "acc-1", Seats: []string{"A-1-1", "A-1-2"}},
					{EventID: event, Account: "acc-1", Class: "pista", Quantity: 2},
				} {
					_, err := s.PlaceHold(context.Background(), req)
					switch {
					case tt.wantDetail == "" && err != nil:
						t.Errorf("PlaceHold(%v) at %s = %v, want a hold", req, clk.Now().Format(time.RFC3339Nano), err)
					case tt.wantDetail != "" && (problem.CodeOf(err) != problem.Unprocessable || !strings.Contains(err.Error(), tt.wantDetail)):
						t.Errorf("PlaceHold(%v) at %s = %v, want an unprocessable problem saying %q", req, clk.Now().Format(time.RFC3339Nano), err, tt.wantDetail)
					}
				}
				m, err := s.SeatMap(context.Background(), event)
				if err != nil {
					t.Fatalf("SeatMap(%s): %v", event, err)
				}
				wantHeld := 4
				if tt.wantDetail != "" {
					wantHeld = 0
				}
				if m.Counts.Held != wantHeld {
					t.Errorf("held tickets = %d, want %d", m.Counts.Held, wantHeld)
				}
			})
		}
	})
}

// TestSaleWindowFollowsTheCatalog: each catalog change carries the window, and the newest
// one applied decides, for maps inventory laid out and maps an admin declared alike.
func TestSaleWindowFollowsTheCatalog(t *testing.T) {
	now := saleStart
	open := SaleWindow{Opens: now.Add(-time.Minute), Starts: now.Add(24 * time.Hour)}
	later := SaleWindow{Opens: now.Add(time.Hour), Starts: now.Add(24 * time.Hour)}
	started := SaleWindow{Opens: now.Add(-48 * time.Hour), Starts: now.Add(-time.Hour)}
	type step struct {
		version int64
		sale    SaleWindow
		want    Sync
	}
	tests := []struct {
		name     string
		declare  bool // an admin declares the map before the steps
		steps    []step
		wantOpen bool // a hold is placed after the steps
	}{
		{name: "on_sale_at moved earlier opens the sale",
			steps: []step{{1, later, SyncCreated}, {2, open, SyncUpdated}}, wantOpen: true},
		{name: "on_sale_at moved later closes it again",
			steps: []step{{1, open, SyncCreated}, {2, later, SyncUpdated}}},
		{name: "starts_at moved into the past ends it",
			steps: []step{{1, open, SyncCreated}, {2, started, SyncUpdated}}},
		{name: "an older change arriving late does not reopen it",
			steps: []step{{2, later, SyncCreated}, {1, open, SyncCurrent}}},
		{name: "a redelivery changes nothing",
			steps: []step{{1, open, SyncCreated}, {1, later, SyncCurrent}}, wantOpen: true},
		{name: "a declared map follows the catalog's window", declare: true,
			steps: []step{{1, later, SyncDeclared}}},
		{name: "a declared map opens with the catalog", declare: true,
			steps: []step{{1, later, SyncDeclared}, {2, open, SyncDeclared}}, wantOpen: true},
		{name: "a declared map ignores an older change", declare: true,
			steps: []step{{2, open, SyncDeclared}, {1, later, SyncDeclared}}, wantOpen: true},
	}
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, testkit.NewClock(now, 0))
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				event := fmt.Sprintf("evt-follow-%02d", i)
				if tt.declare {
					putSeatMap(t, s, event, hall40)
				}
				for j, st := range tt.steps {
					if got := applySale(t, s, event, st.version, hall40, st.sale); got != st.want {
						t.Errorf("step %d: ApplyCatalogLayout(v%d) = %s, want %s", j+1, st.version, got, st.want)
					}
				}
				_, err := s.PlaceHold(context.Background(), HoldRequest{EventID: event, Account: "acc-1", Seats: []string{"A-1-1"}})
				if tt.wantOpen && err != nil {
					t.Errorf("PlaceHold = %v, want a hold", err)
				}
				if !tt.wantOpen && problem.CodeOf(err) != problem.Unprocessable {
					t.Errorf("PlaceHold = %v, want an unprocessable problem (not on sale)", err)
				}
			})
		}
		// A declared map keeps the window the catalog gave: declaring seats is not opening a sale.
		applySale(t, s, "evt-follow-redeclared", 1, hall40, later)
		putSeatMap(t, s, "evt-follow-redeclared", hall60)
		_, err := s.PlaceHold(context.Background(), HoldRequest{EventID: "evt-follow-redeclared", Account: "acc-1", Seats: []string{"B-1-1"}})
		if problem.CodeOf(err) != problem.Unprocessable {
			t.Errorf("PlaceHold after PutSeatMap of an event not on sale = %v, want an unprocessable problem", err)
		}
	})
}

// TestCatalogSale reads the window off the catalog's event; a timestamp it lacks leaves that
// bound open rather than reading as 1970, which would end every sale.
func TestCatalogSale(t *testing.T) {
	on, starts := saleStart, saleStart.Add(24*time.Hour)
	tests := []struct {
		name string
		e    *catalogv1.Event
		want SaleWindow
	}{
		{"both", &catalogv1.Event{OnSaleAt: timestamppb.New(on), StartsAt: timestamppb.New(starts)}, SaleWindow{Opens: on, Starts: starts}},
		{"no starts_at", &catalogv1.Event{OnSaleAt: timestamppb.New(on)}, SaleWindow{Opens: on}},
		{"neither", &catalogv1.Event{}, SaleWindow{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CatalogSale(tt.e)
			if !got.Opens.Equal(tt.want.Opens) || !got.Starts.Equal(tt.want.Starts) || got.Opens.IsZero() != tt.want.Opens.IsZero() || got.Starts.IsZero() != tt.want.Starts.IsZero() {
				t.Errorf("CatalogSale(%v) = %+v, want %+v", tt.e, got, tt.want)
			}
		})
	}
}

// TestHoldBeforeTheSaleOverEachAPI: REST answers 422 with a problem saying when the sale
// opens, gRPC FailedPrecondition with the same words.
func TestHoldBeforeTheSaleOverEachAPI(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, testkit.NewClock(saleStart, 0))
		applySale(t, s, "evt-early", 1, hallGA, tomorrow)
		const want = "tickets of event evt-early are not on sale yet: the sale opens at 2026-06-01T10:00:00Z"
		wantUnprocessableOverEachAPI(t, s, HoldRequest{EventID: "evt-early", Account: "acc-1", Class: "pista", Quantity: 1}, want)
		wantUnprocessableOverEachAPI(t, s, HoldRequest{EventID: "evt-early", Account: "acc-1", Seats: []string{"A-1-1"}}, want)
	})
}

// wantUnprocessableOverEachAPI places req over REST and over gRPC, as req.Account, and
// expects both to refuse it saying want: REST with a 422 problem, gRPC FailedPrecondition.
func wantUnprocessableOverEachAPI(t *testing.T, s *Store, req HoldRequest, want string) {
	t.Helper()
	body := map[string]any{"seats": req.Seats}
	if req.Class != "" {
		body = map[string]any{"class": req.Class, "quantity": req.Quantity}
	}
	srv := httptest.NewServer(routes(nil, s).Mux())
	defer srv.Close()
	var p problemBody
	path := "/v1/events/" + req.EventID + "/holds"
	code := do(t, http.MethodPost, srv.URL+path, req.Account, body, &p)
	if code != http.StatusUnprocessableEntity || p.Code != string(problem.Unprocessable) || p.Detail != want {
		t.Errorf("POST %s %v = %d %+v, want 422 saying %q", path, body, code, p, want)
	}

	g := &grpcServer{store: s}
	_, err := g.PlaceHold(asUser(req.Account), &inventoryv1.PlaceHoldRequest{EventId: req.EventID, Seats: req.Seats, Class: req.Class, Quantity: int32(req.Quantity)})
	if st := status.Convert(err); st.Code() != codes.FailedPrecondition || st.Message() != want {
		t.Errorf("PlaceHold(%v) over gRPC = %v, want %v %q", req, err, codes.FailedPrecondition, want)
	}
}

// TestSaleWindowUpgrade: seat maps stored before inventory knew sale windows stay on sale
// after the migration, so an upgrade never closes a running sale.
func TestSaleWindowUpgrade(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		before, err := migrationsBefore(3)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx, before); err != nil {
			t.Fatalf("migrate to 002: %v", err)
		}
		old := &Store{DB: db, Clock: testkit.NewClock(saleStart, 0).Clock()}
		if err := old.Init(ctx); err != nil {
			t.Fatal(err)
		}
		putSeatMap(t, old, "evt-running", hallGA)

		s := newStore(t, db, testkit.NewClock(saleStart.Add(1000*time.Hour), 0))
		if _, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-running", Account: "acc-1", Class: "pista", Quantity: 1}); err != nil {
			t.Errorf("PlaceHold of a map stored before the sale window = %v, want a hold", err)
		}
	})
}

// migrationsBefore is Migrations without version and later ones: the schema as an older
// release left it.
func migrationsBefore(version int) (fs.FS, error) {
	all := Migrations()
	entries, err := fs.ReadDir(all, ".")
	if err != nil {
		return nil, err
	}
	out := fstest.MapFS{}
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		if v, err := strconv.Atoi(prefix); err != nil || v >= version {
			continue
		}
		b, err := fs.ReadFile(all, e.Name())
		if err != nil {
			return nil, err
		}
		out[e.Name()] = &fstest.MapFile{Data: b}
	}
	if len(out) == 0 {
		return nil, errors.New("no migrations before version")
	}
	return out, nil
}

// TestSaleWindowOfAMapStoredWithoutOne: a map laid out before inventory kept sale windows
// has none, at the catalog's version; the same version, as the catch-up at start brings it,
// gives it the window once, and an older version still changes nothing.
func TestSaleWindowOfAMapStoredWithoutOne(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		s := newStore(t, db, testkit.NewClock(saleStart, 0))
		// As migration 003 left a row laid out before it: version 2, no window.
		applySale(t, s, "evt-premigration", 2, hallGA, SaleWindow{})
		held := HoldRequest{EventID: "evt-premigration", Account: "acc-1", Class: "pista", Quantity: 1}

		if got := applySale(t, s, "evt-premigration", 1, hallGA, tomorrow); got != SyncCurrent {
			t.Errorf("an older version = %s, want %s", got, SyncCurrent)
		}
		if got := applySale(t, s, "evt-premigration", 2, hallGA, tomorrow); got != SyncUpdated {
			t.Errorf("the same version with the window = %s, want %s", got, SyncUpdated)
		}
		if _, err := s.PlaceHold(ctx, held); !errors.Is(err, ErrNotOnSale) {
			t.Errorf("PlaceHold before the sale opens = %v, want not on sale", err)
		}
		if got := applySale(t, s, "evt-premigration", 2, hallGA, tomorrow); got != SyncCurrent {
			t.Errorf("the same version again = %s, want %s", got, SyncCurrent)
		}
	})
}
