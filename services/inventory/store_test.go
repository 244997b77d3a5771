package inventory

import (
	"context"
	"crypto/ed25519"
	"slices"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/waitroom/pass"
)

// newClock is the time source the stores of a test share: it moves when the test says.
func newClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 6, 1, 20, 0, 0, 0, time.UTC), 0)
}

// newStore migrates db and returns a Store over it on clk.
func newStore(t *testing.T, db *sqldb.DB, clk *testkit.Clock) *Store {
	t.Helper()
	ctx := context.Background()
	if err := db.Migrate(ctx, Migrations()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	s := &Store{DB: db, Clock: clk.Clock()}
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// smallVenue is two sections of seats and a GA floor.
var smallVenue = Layout{
	Sections: []SectionLayout{{ID: "B", Class: "cat-2", Rows: 2, SeatsPerRow: 5}, {ID: "A", Class: "cat-1", Rows: 1, SeatsPerRow: 4}},
	GA:       []GAClass{{Class: "ga-floor", Capacity: 10}},
}

func putSeatMap(t *testing.T, s *Store, event string, l Layout) {
	t.Helper()
	if _, err := s.PutSeatMap(context.Background(), event, l); err != nil {
		t.Fatalf("PutSeatMap(%s): %v", event, err)
	}
}

func wantCode(t *testing.T, call string, err error, want problem.Code) {
	t.Helper()
	if err == nil || problem.CodeOf(err) != want {
		t.Fatalf("%s = %v, want a %s problem", call, err, want)
	}
}

// seatStatuses maps each seat of event to its status.
func seatStatuses(t *testing.T, s *Store, event string) map[string]SeatStatus {
	t.Helper()
	m, err := s.SeatMap(context.Background(), event)
	if err != nil {
		t.Fatalf("SeatMap(%s): %v", event, err)
	}
	out := map[string]SeatStatus{}
	for _, sec := range m.Sections {
		for _, r := range sec.Rows {
			for _, st := range r.Seats {
				out[st.ID] = st.Status
			}
		}
	}
	return out
}

// outboxSubjects lists the subjects and ids of the outbox rows, in order.
func outboxSubjects(t *testing.T, db *sqldb.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT subject, id FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var subj, id string
		if err := rows.Scan(&subj, &id); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimPrefix(subj, SubjectPrefix)+" "+id)
	}
	return out
}

func TestStoreSeatMap(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		s := newStore(t, db, newClock())
		m, err := s.PutSeatMap(ctx, "evt-001", smallVenue)
		if err != nil {
			t.Fatal(err)
		}
		if want := (Counts{Total: 24, Available: 24}); m.Counts != want {
			t.Errorf("PutSeatMap counts = %+v, want %+v", m.Counts, want)
		}
		var order []string
		for _, sec := range m.Sections {
			order = append(order, sec.ID+":"+sec.Class)
		}
		if got, want := strings.Join(order, " "), "B:cat-2 A:cat-1"; got != want {
			t.Errorf("sections = %s, want %s (layout order)", got, want)
		}
		if got := m.Sections[0].Rows[1].Seats[4].ID; got != "B-2-5" {
			t.Errorf("last seat of B = %s, want B-2-5", got)
		}

		_, err = s.SeatMap(ctx, "evt-404")
		wantCode(t, "SeatMap(evt-404)", err, problem.NotFound)
		_, err = s.PutSeatMap(ctx, "evt-002", Layout{})
		wantCode(t, "PutSeatMap(empty)", err, problem.Invalid)

		// Replacing an idle map is fine; once a ticket is held it is refused.
		bigger := smallVenue
		bigger.FlashSale = true
		bigger.Sections = append(slices.Clone(smallVenue.Sections), SectionLayout{ID: "C", Class: "cat-3", Rows: 1, SeatsPerRow: 1})
		if m, err = s.PutSeatMap(ctx, "evt-001", bigger); err != nil || m.Counts.Total != 25 || !m.FlashSale {
			t.Fatalf("replace idle map = %+v, %v, want 25 seats, flash sale", m.Counts, err)
		}
		putSeatMap(t, s, "evt-001", smallVenue)
		if _, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-1", Class: "ga-floor", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
		_, err = s.PutSeatMap(ctx, "evt-001", bigger)
		wantCode(t, "PutSeatMap(in use)", err, problem.Conflict)
	})
}

func TestStoreHoldSeats(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := newClock()
		s := newStore(t, db, clk)
		putSeatMap(t, s, "evt-001", smallVenue)

		h, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-1", Seats: []string{"B-1-2", "A-1-1"}})
		if err != nil {
			t.Fatal(err)
		}
		if h.Status != HoldActive || h.Quantity != 2 || !h.ExpiresAt.Equal(clk.Now().Add(DefaultHoldTTL)) {
			t.Errorf("PlaceHold = %+v, want active, 2 tickets, expiring in %v", h, DefaultHoldTTL)
		}
		if want := []TicketCount{{"cat-1", 1}, {"cat-2", 1}}; !slices.Equal(h.Tickets, want) {
			t.Errorf("Tickets = %v, want %v", h.Tickets, want)
		}

		// All or nothing: B-1-3 is free but B-1-2 is not, so neither is taken.
		_, err = s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-2", Seats: []string{"B-1-3", "B-1-2"}})
		wantCode(t, "PlaceHold(overlapping)", err, problem.Conflict)
		if !strings.Contains(err.Error(), "B-1-2") || strings.Contains(err.Error(), "B-1-3") {
			t.Errorf("conflict = %v, want it to name B-1-2 only", err)
		}
		st := seatStatuses(t, s, "evt-001")
		if st["B-1-3"] != SeatAvailable || st["B-1-2"] != SeatHeld || st["A-1-1"] != SeatHeld {
			t.Errorf("after the refused hold: B-1-3 %s, B-1-2 %s, A-1-1 %s; want available, held, held", st["B-1-3"], st["B-1-2"], st["A-1-1"])
		}

		_, err = s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-2", Seats: []string{"Z-1-1"}})
		wantCode(t, "PlaceHold(no such seat)", err, problem.Invalid)
		_, err = s.PlaceHold(ctx, HoldRequest{EventID: "evt-404", Account: "acc-2", Seats: []string{"A-1-1"}})
		wantCode(t, "PlaceHold(no such event)", err, problem.NotFound)

		got, err := s.Hold(ctx, h.ID, "acc-1")
		if err != nil || !slices.Equal(got.Seats, []string{"A-1-1", "B-1-2"}) || !slices.Equal(got.Tickets, h.Tickets) {
			t.Errorf("Hold(%s) = %+v, %v; want seats [A-1-1 B-1-2] and the tickets of PlaceHold", h.ID, got, err)
		}
		_, err = s.Hold(ctx, h.ID, "acc-2")
		wantCode(t, "Hold(another account)", err, problem.Forbidden)
		_, err = s.Hold(ctx, "hold-404", "")
		wantCode(t, "Hold(hold-404)", err, problem.NotFound)
	})
}

func TestStoreHoldGA(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		s := newStore(t, db, newClock())
		putSeatMap(t, s, "evt-001", smallVenue)
		for i, q := range []int{4, 4} {
			if _, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-1", Class: "ga-floor", Quantity: q}); err != nil {
				t.Fatalf("hold %d: %v", i, err)
			}
		}
		_, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-2", Class: "ga-floor", Quantity: 3})
		wantCode(t, "PlaceHold(3 of 2 left)", err, problem.Conflict)
		if !strings.Contains(err.Error(), "only 2") {
			t.Errorf("conflict = %v, want it to say only 2 are left", err)
		}
		_, err = s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-2", Class: "ga-balcony", Quantity: 1})
		wantCode(t, "PlaceHold(no such class)", err, problem.Invalid)
		h, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-2", Class: "ga-floor", Quantity: 2})
		if err != nil {
			t.Fatal(err)
		}
		if want := []TicketCount{{"ga-floor", 2}}; !slices.Equal(h.Tickets, want) {
			t.Errorf("Tickets = %v, want %v", h.Tickets, want)
		}
		m, _ := s.SeatMap(ctx, "evt-001")
		if want := (Counts{Total: 10, Held: 10}); m.GA[0].Counts != want {
			t.Errorf("GA counts = %+v, want %+v", m.GA[0].Counts, want)
		}
	})
}

func TestStoreConfirmReleaseExpire(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := newClock()
		s := newStore(t, db, clk)
		putSeatMap(t, s, "evt-001", smallVenue)
		place := func(req HoldRequest) Hold {
			t.Helper()
			req.EventID, req.Account = "evt-001", "acc-1"
			h, err := s.PlaceHold(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		sold := place(HoldRequest{Seats: []string{"A-1-1"}})
		soldGA := place(HoldRequest{Class: "ga-floor", Quantity: 2})
		released := place(HoldRequest{Seats: []string{"A-1-2"}})
		clk.Advance(time.Minute)
		expiring := place(HoldRequest{Seats: []string{"A-1-3"}})
		expiringGA := place(HoldRequest{Class: "ga-floor", Quantity: 3})

		for _, h := range []Hold{sold, soldGA} {
			for range 2 { // the second confirmation is a no-op that answers the same
				got, err := s.ConfirmHold(ctx, h.ID, "")
				if err != nil || got.Status != HoldConfirmed {
					t.Fatalf("ConfirmHold(%s) = %s, %v, want confirmed", h.ID, got.Status, err)
				}
			}
		}
		_, err := s.ConfirmHold(ctx, released.ID, "acc-2")
		wantCode(t, "ConfirmHold(another account)", err, problem.Forbidden)
		_, err = s.ReleaseHold(ctx, sold.ID, "acc-1")
		wantCode(t, "ReleaseHold(confirmed)", err, problem.Conflict)
		for range 2 {
			got, err := s.ReleaseHold(ctx, released.ID, "acc-1")
			if err != nil || got.Status != HoldReleased {
				t.Fatalf("ReleaseHold = %s, %v, want released", got.Status, err)
			}
		}
		_, err = s.ConfirmHold(ctx, released.ID, "")
		wantCode(t, "ConfirmHold(released)", err, problem.Gone)

		// The first three holds pass their expiry; the sweeper takes only the active one's
		// seats… and the later two are not due yet.
		clk.Advance(DefaultHoldTTL - time.Minute)
		n, err := s.ExpireDue(ctx, 100)
		if err != nil || n != 0 {
			t.Fatalf("ExpireDue = %d, %v, want 0 (nothing active is due)", n, err)
		}
		clk.Advance(time.Minute)
		_, err = s.ConfirmHold(ctx, expiring.ID, "acc-1")
		wantCode(t, "ConfirmHold(due)", err, problem.Gone)
		if got, _ := s.Hold(ctx, expiring.ID, ""); got.Status != HoldExpired {
			t.Errorf("a due hold after ConfirmHold is %s, want expired on the spot", got.Status)
		}
		if n, err = s.ExpireDue(ctx, 100); err != nil || n != 1 {
			t.Fatalf("ExpireDue = %d, %v, want 1 (the GA hold)", n, err)
		}
		_, err = s.ConfirmHold(ctx, expiringGA.ID, "")
		wantCode(t, "ConfirmHold(expired)", err, problem.Gone)

		st := seatStatuses(t, s, "evt-001")
		if st["A-1-1"] != SeatSold || st["A-1-2"] != SeatAvailable || st["A-1-3"] != SeatAvailable {
			t.Errorf("seats A-1-1..3 = %s %s %s, want sold available available", st["A-1-1"], st["A-1-2"], st["A-1-3"])
		}
		m, _ := s.SeatMap(ctx, "evt-001")
		if want := (Counts{Total: 10, Available: 8, Sold: 2}); m.GA[0].Counts != want {
			t.Errorf("GA counts = %+v, want %+v", m.GA[0].Counts, want)
		}

		want := []string{
			"placed " + sold.ID + "@placed", "placed " + soldGA.ID + "@placed", "placed " + released.ID + "@placed",
			"placed " + expiring.ID + "@placed", "placed " + expiringGA.ID + "@placed",
			"confirmed " + sold.ID + "@confirmed", "confirmed " + soldGA.ID + "@confirmed",
			"released " + released.ID + "@released",
			"expired " + expiring.ID + "@expired", "expired " + expiringGA.ID + "@expired",
		}
		if got := outboxSubjects(t, db); !slices.Equal(got, want) {
			t.Errorf("outbox =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

func TestStoreFlashSaleNeedsPass(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := newClock()
		priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
		s := newStore(t, db, clk)
		s.PassKey = priv.Public().(ed25519.PublicKey)
		flash := smallVenue
		flash.FlashSale = true
		putSeatMap(t, s, "evt-040", flash)
		req := HoldRequest{EventID: "evt-040", Account: "acc-1", Seats: []string{"A-1-1"}}

		_, err := s.PlaceHold(ctx, req)
		wantCode(t, "PlaceHold(no pass)", err, problem.Forbidden)
		req.Pass = pass.Sign(priv, pass.Pass{EventID: "evt-040", User: "acc-2", ExpiresAt: clk.Now().Add(time.Minute)})
		_, err = s.PlaceHold(ctx, req)
		wantCode(t, "PlaceHold(another account's pass)", err, problem.Forbidden)
		req.Pass = pass.Sign(priv, pass.Pass{EventID: "evt-040", User: "acc-1", ExpiresAt: clk.Now().Add(time.Minute)})
		if _, err := s.PlaceHold(ctx, req); err != nil {
			t.Fatalf("PlaceHold(valid pass): %v", err)
		}
		if got := outboxSubjects(t, db); len(got) != 1 {
			t.Errorf("outbox = %v, want only the one granted hold", got)
		}
	})
}

func TestStoreListHolds(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := newClock()
		s := newStore(t, db, clk)
		putSeatMap(t, s, "evt-001", smallVenue)
		var want []string
		for i := range 5 {
			h, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-1", Class: "ga-floor", Quantity: 1})
			if err != nil {
				t.Fatal(err)
			}
			want = append([]string{h.ID}, want...) // newest first
			if i%2 == 0 {
				clk.Advance(time.Second) // some holds share a millisecond, some do not
			}
		}
		if _, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "acc-2", Class: "ga-floor", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
		var got []string
		cursor := ""
		for page := 0; page < 5; page++ {
			hs, next, err := s.ListHolds(ctx, "acc-1", 2, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				got = append(got, h.ID)
			}
			if cursor = next; cursor == "" {
				break
			}
		}
		// Holds made in one millisecond come back by id, descending; compare as sets in
		// creation-time order instead of assuming ids ascend with time.
		if len(got) != 5 || !sameSet(got, want) {
			t.Errorf("ListHolds pages = %v, want the 5 holds of acc-1 %v", got, want)
		}
		_, _, err := s.ListHolds(ctx, "acc-1", 2, "garbage!")
		wantCode(t, "ListHolds(bad cursor)", err, problem.Invalid)
		_, _, err = s.ListHolds(ctx, "acc-1", 1000, "")
		wantCode(t, "ListHolds(limit 1000)", err, problem.Invalid)
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestStoreAvailability(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		s := newStore(t, db, newClock())
		putSeatMap(t, s, "evt-001", smallVenue)
		putSeatMap(t, s, "evt-002", Layout{Sections: []SectionLayout{{ID: "A", Class: "c", Rows: 1, SeatsPerRow: 2}}})
		if _, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-002", Account: "a", Seats: []string{"A-1-1", "A-1-2"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PlaceHold(ctx, HoldRequest{EventID: "evt-001", Account: "a", Class: "ga-floor", Quantity: 3}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Availability(ctx, []string{"evt-001", "evt-002", "evt-404"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Counts{
			"evt-001": {Total: 24, Available: 21, Held: 3},
			"evt-002": {Total: 2, Held: 2},
		}
		if len(got) != len(want) || got["evt-001"] != want["evt-001"] || got["evt-002"] != want["evt-002"] {
			t.Errorf("Availability = %+v, want %+v", got, want)
		}
		_, err = s.Availability(ctx, make([]string, MaxAvailabilityBatch+1))
		wantCode(t, "Availability(101 ids)", err, problem.Invalid)
	})
}
