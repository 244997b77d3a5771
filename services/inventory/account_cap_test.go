package inventory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// capVenue has seats and GA tickets enough for several accounts' caps.
var capVenue = Layout{
	Sections: []SectionLayout{{ID: "A", Class: "plateia", Rows: 2, SeatsPerRow: 20}},
	GA:       []GAClass{{Class: "pista", Capacity: 100}},
}

// capSeat is capVenue's k-th seat, from 0.
func capSeat(k int) string { return SeatID("A", k/20+1, k%20+1) }

func TestCheckAccountCap(t *testing.T) {
	tests := []struct {
		name               string
		held, asked, limit int
		wantDetail         string // "" = allowed
	}{
		{"nothing held", 0, 8, 8, ""},
		{"up to the cap", 5, 3, 8, ""},
		{"one past the cap", 5, 4, 8, "the account holds 5 tickets of event evt-1 and may hold at most 8 at a time; this hold asks for 4 more"},
		{"at the cap, one more", 8, 1, 8, "holds 8 tickets"},
		{"a smaller cap", 2, 2, 3, "may hold at most 3 at a time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAccountCap(tt.held, tt.asked, tt.limit, "evt-1")
			switch {
			case tt.wantDetail == "" && err != nil:
				t.Errorf("CheckAccountCap(%d, %d, %d) = %v, want allowed", tt.held, tt.asked, tt.limit, err)
			case tt.wantDetail != "" && (problem.CodeOf(err) != problem.Unprocessable || !strings.Contains(err.Error(), tt.wantDetail)):
				t.Errorf("CheckAccountCap(%d, %d, %d) = %v, want an unprocessable problem saying %q", tt.held, tt.asked, tt.limit, err, tt.wantDetail)
			}
		})
	}
}

// capStep is one thing an account does in TestPlaceHoldAccountCap.
type capStep struct {
	do      string // "hold", "release" or "confirm" (step ref's hold), "lapse" (pass the TTL), "sweep"
	account string
	seats   []string // hold: these seats…
	n       int      // …or this many GA tickets
	other   bool     // hold: on another event
	ref     int      // release, confirm: the step whose hold
	want    string   // hold: "" = held, else what the 422 says
}

// TestPlaceHoldAccountCap: an account holds at most the cap of one event's tickets across its
// active holds, seated and GA alike; a hold that ends (released, expired, or confirmed, its
// tickets sold) frees its share; other accounts and other events count apart; a refused
// hold claims nothing.
func TestPlaceHoldAccountCap(t *testing.T) {
	hold := func(account string, n int, want string) capStep {
		return capStep{do: "hold", account: account, n: n, want: want}
	}
	tests := []struct {
		name     string
		cap      int // Store.MaxTicketsPerAccount; 0 = the default, 8
		steps    []capStep
		wantHeld int // tickets held of the event at the end
	}{
		{name: "at the cap, then one more", steps: []capStep{
			hold("acc-1", 5, ""),
			{do: "hold", account: "acc-1", seats: []string{"A-1-1", "A-1-2", "A-1-3"}},
			hold("acc-1", 1, "the account holds 8 tickets of event evt-cap-00 and may hold at most 8 at a time; this hold asks for 1 more"),
			{do: "hold", account: "acc-1", seats: []string{"A-1-4"}, want: "holds 8 tickets"},
		}, wantHeld: 8},
		{name: "one hold past the cap", steps: []capStep{
			hold("acc-1", 6, ""),
			hold("acc-1", 3, "holds 6 tickets"),
			hold("acc-1", 2, ""),
		}, wantHeld: 8},
		{name: "a released hold frees its tickets", steps: []capStep{
			hold("acc-1", 8, ""),
			hold("acc-1", 1, "holds 8 tickets"),
			{do: "release", ref: 0},
			hold("acc-1", 8, ""),
		}, wantHeld: 8},
		{name: "a hold past its expiry frees its tickets before the sweeper runs", steps: []capStep{
			hold("acc-1", 8, ""),
			hold("acc-1", 1, "holds 8 tickets"),
			{do: "lapse"},
			hold("acc-1", 8, ""),
		}, wantHeld: 16}, // the lapsed hold's 8 until the sweeper returns them
		{name: "an expired hold frees its tickets", steps: []capStep{
			hold("acc-1", 8, ""),
			hold("acc-1", 1, "holds 8 tickets"),
			{do: "lapse"},
			{do: "sweep"},
			hold("acc-1", 8, ""),
		}, wantHeld: 8},
		{name: "confirmed tickets are sold, not held", steps: []capStep{
			hold("acc-1", 8, ""),
			{do: "confirm", ref: 0},
			hold("acc-1", 8, ""),
			hold("acc-1", 1, "holds 8 tickets"),
		}, wantHeld: 8},
		{name: "accounts count apart", steps: []capStep{
			hold("acc-1", 8, ""),
			hold("acc-2", 8, ""),
			hold("acc-1", 1, "holds 8 tickets"),
			hold("acc-2", 1, "holds 8 tickets"),
		}, wantHeld: 16},
		{name: "events count apart", steps: []capStep{
			hold("acc-1", 8, ""),
			{do: "hold", account: "acc-1", n: 8, other: true},
			hold("acc-1", 1, "holds 8 tickets"),
		}, wantHeld: 8},
		{name: "a cap the store sets", cap: 3, steps: []capStep{
			hold("acc-1", 2, ""),
			hold("acc-1", 2, "holds 2 tickets of event evt-cap-08 and may hold at most 3 at a time"),
			hold("acc-1", 1, ""),
		}, wantHeld: 3},
	}
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				clk := newClock()
				s := newStore(t, db, clk)
				s.MaxTicketsPerAccount = tt.cap
				event, other := fmt.Sprintf("evt-cap-%02d", i), fmt.Sprintf("evt-cap-%02d-other", i)
				putSeatMap(t, s, event, capVenue)
				putSeatMap(t, s, other, capVenue)
				holds := make([]Hold, len(tt.steps))
				for j, st := range tt.steps {
					var err error
					switch st.do {
					case "hold":
						req := HoldRequest{EventID: event, Account: st.account, Seats: st.seats}
						if st.other {
							req.EventID = other
						}
						if len(st.seats) == 0 {
							req.Class, req.Quantity = "pista", st.n
						}
						holds[j], err = s.PlaceHold(ctx, req)
						switch {
						case st.want == "" && err != nil:
							t.Fatalf("step %d: PlaceHold(%s, %d tickets) = %v, want a hold", j, st.account, max(st.n, len(st.seats)), err)
						case st.want != "" && (problem.CodeOf(err) != problem.Unprocessable || !strings.Contains(err.Error(), st.want)):
							t.Fatalf("step %d: PlaceHold(%s, %d tickets) = %v, want an unprocessable problem saying %q", j, st.account, max(st.n, len(st.seats)), err, st.want)
						}
					case "release":
						_, err = s.ReleaseHold(ctx, holds[st.ref].ID, "")
					case "confirm":
						_, err = s.ConfirmHold(ctx, holds[st.ref].ID, "")
					case "lapse":
						clk.Advance(DefaultHoldTTL)
					case "sweep":
						_, err = s.ExpireDue(ctx, 100)
					}
					if err != nil && st.do != "hold" {
						t.Fatalf("step %d: %s = %v", j, st.do, err)
					}
				}
				m, err := s.SeatMap(ctx, event)
				if err != nil {
					t.Fatalf("SeatMap(%s): %v", event, err)
				}
				if m.Counts.Held != tt.wantHeld {
					t.Errorf("held tickets of %s = %d, want %d", event, m.Counts.Held, tt.wantHeld)
				}
			})
		}
	})
}

// TestAccountCapUnderConcurrency: one account sends many holds of 2 tickets at once, through
// two instances sharing the database; however they interleave, it ends up holding the cap
// exactly (4 holds), the others refused, on each engine. Several events give the race several
// chances to show.
func TestAccountCapUnderConcurrency(t *testing.T) {
	const (
		events   = 4
		attempts = 16 // per event, all at once, 2 tickets each
	)
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := newClock()
		stores := []*Store{newStore(t, db, clk), newStore(t, secondHandle(t, db), clk)}
		for e := range events {
			event := fmt.Sprintf("evt-cap-race-%d", e)
			putSeatMap(t, stores[0], event, capVenue)
			var mu sync.Mutex
			granted, refused := 0, 0
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range attempts {
				wg.Go(func() {
					// Seated and GA holds alike: the cap counts tickets, not classes.
					req := HoldRequest{EventID: event, Account: "acc-bot", Seats: []string{capSeat(2 * i), capSeat(2*i + 1)}}
					if i%2 == 1 {
						req = HoldRequest{EventID: event, Account: "acc-bot", Class: "pista", Quantity: 2}
					}
					<-start
					_, err := stores[i%2].PlaceHold(ctx, req)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						granted++
					case problem.CodeOf(err) == problem.Unprocessable:
						refused++
					default:
						t.Errorf("%s: PlaceHold(%v) = %v, want a hold or an unprocessable problem", event, req, err)
					}
				})
			}
			close(start)
			wg.Wait()
			if granted != DefaultMaxTicketsPerAccount/2 || refused != attempts-granted {
				t.Errorf("%s: granted %d holds of 2, refused %d; want %d and %d", event, granted, refused, DefaultMaxTicketsPerAccount/2, attempts-DefaultMaxTicketsPerAccount/2)
			}
			m, err := stores[1].SeatMap(ctx, event)
			if err != nil {
				t.Fatal(err)
			}
			if m.Counts.Held != DefaultMaxTicketsPerAccount {
				t.Errorf("%s: tickets held = %d, want the cap, %d", event, m.Counts.Held, DefaultMaxTicketsPerAccount)
			}
		}
	})
}

// TestAccountCapOverEachAPI: REST answers 422 with a problem saying how many the account
// holds and the cap, gRPC FailedPrecondition with the same words.
func TestAccountCapOverEachAPI(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, newClock())
		putSeatMap(t, s, "evt-capped", capVenue)
		if _, err := s.PlaceHold(context.Background(), HoldRequest{EventID: "evt-capped", Account: "acc-1", Class: "pista", Quantity: 7}); err != nil {
			t.Fatal(err)
		}
		const want = "the account holds 7 tickets of event evt-capped and may hold at most 8 at a time; this hold asks for 2 more (order or release a hold first)"
		wantUnprocessableOverEachAPI(t, s, HoldRequest{EventID: "evt-capped", Account: "acc-1", Class: "pista", Quantity: 2}, want)
		wantUnprocessableOverEachAPI(t, s, HoldRequest{EventID: "evt-capped", Account: "acc-1", Seats: []string{"A-1-1", "A-1-2"}}, want)
	})
}
