package inventory

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// countHolds is how many holds account has in the database, whatever their status.
func countHolds(t *testing.T, db *sqldb.DB, account string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(db.Rebind(`SELECT COUNT(*) FROM holds WHERE account = ?`), account).Scan(&n); err != nil {
		t.Fatalf("count holds: %v", err)
	}
	return n
}

// TestPlaceHoldIdempotencyKey: the same account and key return the first hold, as it is
// now, and hold nothing more; another request under the key is refused naming it; another
// account's same key is its own; a request without a key always places a new hold.
func TestPlaceHoldIdempotencyKey(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		s := newStore(t, db, newClock())
		putSeatMap(t, s, "evt-001", smallVenue)
		req := HoldRequest{EventID: "evt-001", Account: "acc-1", Seats: []string{"B-1-2", "A-1-1"}, IdempotencyKey: "k-1"}

		first, created, err := s.PlaceHoldOnce(ctx, req)
		if err != nil || !created {
			t.Fatalf("PlaceHoldOnce(k-1) = %v, created %v; want a new hold", err, created)
		}
		// The seats in another order are the same request.
		again := req
		again.Seats = []string{"A-1-1", "B-1-2"}
		got, created, err := s.PlaceHoldOnce(ctx, again)
		if err != nil || created || got.ID != first.ID {
			t.Fatalf("retry of k-1 = %s, created %v, %v; want %s replayed", got.ID, created, err, first.ID)
		}
		if n := countHolds(t, db, "acc-1"); n != 1 {
			t.Errorf("holds of acc-1 after a retry = %d, want 1", n)
		}

		other := req
		other.Seats = []string{"B-1-3"}
		_, _, err = s.PlaceHoldOnce(ctx, other)
		wantCode(t, "PlaceHoldOnce(k-1, other seats)", err, problem.Unprocessable)
		if p, ok := errors.AsType[*problem.Error](err); !ok || p.Field != IdempotencyKeyHeader {
			t.Errorf("refusal = %v, want it to name %s", err, IdempotencyKeyHeader)
		}

		// A key is per account: acc-2's k-1 is a hold of its own.
		theirs := HoldRequest{EventID: "evt-001", Account: "acc-2", Seats: []string{"B-1-3"}, IdempotencyKey: "k-1"}
		if h, created, err := s.PlaceHoldOnce(ctx, theirs); err != nil || !created || h.ID == first.ID {
			t.Errorf("acc-2's k-1 = %s, created %v, %v; want a new hold", h.ID, created, err)
		}

		// Once released, the key still names the ended hold: a retry learns what became of
		// it and holds nothing again.
		if _, err := s.ReleaseHold(ctx, first.ID, "acc-1"); err != nil {
			t.Fatal(err)
		}
		got, created, err = s.PlaceHoldOnce(ctx, req)
		if err != nil || created || got.ID != first.ID || got.Status != HoldReleased {
			t.Errorf("k-1 after release = %s %s, created %v, %v; want %s released", got.ID, got.Status, created, err, first.ID)
		}
		if st := seatStatuses(t, s, "evt-001"); st["A-1-1"] != SeatAvailable {
			t.Errorf("A-1-1 after a retry of a released hold = %s, want available", st["A-1-1"])
		}

		// A refused request records nothing: its key is free for the retry that succeeds.
		_, _, err = s.PlaceHoldOnce(ctx, HoldRequest{EventID: "evt-001", Account: "acc-1", Seats: []string{"B-1-3"}, IdempotencyKey: "k-2"})
		wantCode(t, "PlaceHoldOnce(k-2, a taken seat)", err, problem.Conflict)
		if _, created, err := s.PlaceHoldOnce(ctx, HoldRequest{EventID: "evt-001", Account: "acc-1", Seats: []string{"B-1-4"}, IdempotencyKey: "k-2"}); err != nil || !created {
			t.Errorf("k-2 after its refusal = created %v, %v; want a new hold", created, err)
		}

		// Without a key every request is a hold of its own.
		plain := HoldRequest{EventID: "evt-001", Account: "acc-3", Class: "ga-floor", Quantity: 1}
		for range 2 {
			if _, err := s.PlaceHold(ctx, plain); err != nil {
				t.Fatal(err)
			}
		}
		if n := countHolds(t, db, "acc-3"); n != 2 {
			t.Errorf("holds of acc-3 after two keyless requests = %d, want 2", n)
		}

		_, _, err = s.PlaceHoldOnce(ctx, HoldRequest{EventID: "evt-001", Account: "acc-1", Class: "ga-floor", Quantity: 1, IdempotencyKey: string(make([]byte, MaxKeyLen+1))})
		wantCode(t, "PlaceHoldOnce(a key too long)", err, problem.Invalid)
	})
}

// TestPlaceHoldIdempotencyUnderConcurrency: retries of one request with one key, sent at once
// through two instances sharing the database, all answer with the one hold they placed.
func TestPlaceHoldIdempotencyUnderConcurrency(t *testing.T) {
	const twins = 12
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := newClock()
		stores := []*Store{newStore(t, db, clk), newStore(t, secondHandle(t, db), clk)}
		putSeatMap(t, stores[0], "evt-twins", smallVenue)
		req := HoldRequest{EventID: "evt-twins", Account: "acc-twin", Class: "ga-floor", Quantity: 2, IdempotencyKey: "k-twin"}

		var mu sync.Mutex
		ids := map[string]int{}
		created := 0
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range twins {
			wg.Go(func() {
				<-start
				h, fresh, err := stores[i%2].PlaceHoldOnce(ctx, req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("twin %d: PlaceHoldOnce = %v, want the one hold", i, err)
					return
				}
				ids[h.ID]++
				if fresh {
					created++
				}
			})
		}
		close(start)
		wg.Wait()
		if len(ids) != 1 || created != 1 {
			t.Errorf("%d twins got holds %v, %d created; want one hold, created once", twins, ids, created)
		}
		if n := countHolds(t, db, "acc-twin"); n != 1 {
			t.Errorf("holds in the database = %d, want 1", n)
		}
		m, err := stores[1].SeatMap(ctx, "evt-twins")
		if err != nil {
			t.Fatal(err)
		}
		if m.Counts.Held != 2 {
			t.Errorf("tickets held = %d, want 2", m.Counts.Held)
		}
	})
}

// TestIdempotencyKeyOverEachAPI: REST reads the Idempotency-Key header (201 first, 200
// replayed, 422 for another body), gRPC the idempotency_key field (the same hold, or
// FailedPrecondition).
func TestIdempotencyKeyOverEachAPI(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db, newClock())
		putSeatMap(t, s, "evt-api", smallVenue)
		srv := httptest.NewServer(routes(nil, s).Mux())
		defer srv.Close()
		url := srv.URL + "/v1/events/evt-api/holds"
		body := map[string]any{"class": "ga-floor", "quantity": 1}

		var first, second Hold
		if code := do(t, http.MethodPost, url, "acc-1", body, &first, IdempotencyKeyHeader, "k-rest"); code != http.StatusCreated {
			t.Fatalf("POST with k-rest = %d, want 201", code)
		}
		if code := do(t, http.MethodPost, url, "acc-1", body, &second, IdempotencyKeyHeader, "k-rest"); code != http.StatusOK || second.ID != first.ID {
			t.Errorf("POST again with k-rest = %d %s, want 200 %s", code, second.ID, first.ID)
		}
		var p problemBody
		code := do(t, http.MethodPost, url, "acc-1", map[string]any{"class": "ga-floor", "quantity": 2}, &p, IdempotencyKeyHeader, "k-rest")
		if code != http.StatusUnprocessableEntity || p.Field != IdempotencyKeyHeader {
			t.Errorf("POST another body with k-rest = %d %+v, want 422 naming %s", code, p, IdempotencyKeyHeader)
		}

		g := &grpcServer{store: s}
		req := &inventoryv1.PlaceHoldRequest{EventId: "evt-api", Class: "ga-floor", Quantity: 1, IdempotencyKey: "k-grpc"}
		a, err := g.PlaceHold(asUser("acc-1"), req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := g.PlaceHold(asUser("acc-1"), req)
		if err != nil || b.GetId() != a.GetId() {
			t.Errorf("PlaceHold again with k-grpc = %s, %v; want %s", b.GetId(), err, a.GetId())
		}
		req.Quantity = 2
		if _, err := g.PlaceHold(asUser("acc-1"), req); status.Code(err) != codes.FailedPrecondition {
			t.Errorf("PlaceHold another body with k-grpc = %v, want %v", err, codes.FailedPrecondition)
		}
		if n := countHolds(t, db, "acc-1"); n != 2 {
			t.Errorf("holds of acc-1 = %d, want 2 (one per key)", n)
		}
	})
}
