package order

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// testIDs numbers the orders of every test store, so stores sharing a database never clash.
var testIDs = ids.Sequence()

// newTestStore migrates db and returns a Store whose clock advances a millisecond a call
// from t0 and whose ids count up.
func newTestStore(t *testing.T, db *sqldb.DB) *Store {
	t.Helper()
	ctx := context.Background()
	if err := db.Migrate(ctx, Migrations()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := outbox.EnsureTable(ctx, db); err != nil {
		t.Fatalf("outbox table: %v", err)
	}
	return &Store{
		DB:    db,
		Clock: testkit.NewClock(t0, time.Millisecond).Clock(),
		IDs:   testIDs,
	}
}

func testHold(id, account string) Hold {
	return Hold{ID: id, EventID: "evt-1", Account: account, Status: HoldActive, ExpiresAt: t0.Add(time.Hour),
		Tickets: []Tickets{{"cat-1", 2}}}
}

func place(t *testing.T, s *Store, req CreateRequest) (Order, bool, error) {
	t.Helper()
	h := testHold(req.HoldID, req.Account)
	lines, total, err := Price(h, map[string]money.Money{"cat-1": {Currency: "BRL", Minor: 10000}})
	if err != nil {
		t.Fatal(err)
	}
	return s.Create(context.Background(), req, s.NewOrder(req.Account, h, lines, total))
}

// outboxSubjects lists the subjects of the events in the outbox, oldest first.
func outboxSubjects(t *testing.T, db *sqldb.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT subject FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestStoreCreateIsIdempotent(t *testing.T) {
	testkit.ForEachDB(t, "order", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		req := CreateRequest{Account: "acc_1", IdempotencyKey: "k1", HoldID: "h1"}
		first, created, err := place(t, s, req)
		if err != nil || !created || first.State != Pending || first.Amount != (money.Money{Currency: "BRL", Minor: 20000}) {
			t.Fatalf("Create = %+v, %v, %v; want a new pending order of BRL 200.00", first, created, err)
		}
		again, created, err := place(t, s, req)
		if err != nil || created || again.ID != first.ID {
			t.Fatalf("Create again = %s, created %v, %v; want %s replayed", again.ID, created, err, first.ID)
		}
		if o, found, err := s.Replay(ctx, req); err != nil || !found || o.ID != first.ID {
			t.Errorf("Replay = %s, %v, %v; want %s", o.ID, found, err, first.ID)
		}
		other := req
		other.HoldID = "h2"
		_, _, err = place(t, s, other)
		if p, ok := err.(*problem.Error); !ok || p.Code != problem.Unprocessable || p.Field != IdempotencyKeyHeader {
			t.Errorf("Create(same key, other hold) = %v, want unprocessable naming %s", err, IdempotencyKeyHeader)
		}
		if _, _, err := place(t, s, CreateRequest{Account: "acc_1", IdempotencyKey: "k3", HoldID: "h1"}); problem.CodeOf(err) != problem.Conflict {
			t.Errorf("Create(other key, ordered hold) = %v, want conflict", err)
		}
		if _, created, err := place(t, s, CreateRequest{Account: "acc_2", IdempotencyKey: "k1", HoldID: "h9"}); err != nil || !created {
			t.Errorf("Create(another fan, same key) = created %v, %v; want a new order: keys are per account", created, err)
		}
		if got := fmt.Sprint(outboxSubjects(t, db)); got != "[boxoffice.order.order.created boxoffice.order.order.created]" {
			t.Errorf("outbox = %s, want one created event per order", got)
		}
	})
}

func TestStoreConcurrentCreatesWithOneKeyMakeOneOrder(t *testing.T) {
	testkit.ForEachDB(t, "order", func(t *testing.T, db *sqldb.DB) {
		s := newTestStore(t, db)
		req := CreateRequest{Account: "acc_1", IdempotencyKey: "same", HoldID: "h1"}
		const callers = 20
		ids := make([]string, callers)
		var createdN atomic.Int32
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				o, created, err := place(t, s, req)
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
				}
				if created {
					createdN.Add(1)
				}
				ids[i] = o.ID
			})
		}
		wg.Wait()
		for i, id := range ids {
			if id != ids[0] {
				t.Errorf("caller %d got %q, caller 0 got %q; want one order", i, id, ids[0])
			}
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM orders`).Scan(&n); err != nil || n != 1 || createdN.Load() != 1 {
			t.Errorf("orders stored = %d (created reported %d times), %v; want 1", n, createdN.Load(), err)
		}
	})
}

func TestStoreSaveIsCompareAndSet(t *testing.T) {
	testkit.ForEachDB(t, "order", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		o, _, err := place(t, s, CreateRequest{Account: "acc_1", IdempotencyKey: "k1", HoldID: "h1"})
		if err != nil {
			t.Fatal(err)
		}
		charging, _ := o.Move(Charging, "", s.Clock.Now().UTC())
		saved, err := s.Save(ctx, charging)
		if err != nil || saved.Version != o.Version+1 {
			t.Fatalf("Save = version %d, %v; want %d", saved.Version, err, o.Version+1)
		}
		if _, err := s.Save(ctx, charging); !errors.Is(err, errStale) {
			t.Errorf("Save(stale version) = %v, want errStale", err)
		}
		releasing, _ := saved.Move(Releasing, ReasonDeclined, s.Clock.Now().UTC())
		releasing, err = s.Save(ctx, releasing)
		if err != nil {
			t.Fatal(err)
		}
		failed, _ := releasing.Move(Failed, "", s.Clock.Now().UTC())
		if _, err := s.Save(ctx, failed); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, o.ID)
		if err != nil || got.State != Failed || got.FailureReason != ReasonDeclined {
			t.Errorf("Get = %+v, %v; want failed, %q", got, err, ReasonDeclined)
		}
		if got := fmt.Sprint(outboxSubjects(t, db)); got != "[boxoffice.order.order.created boxoffice.order.order.failed]" {
			t.Errorf("outbox = %s, want created then failed, nothing for the steps between", got)
		}
	})
}

func TestStoreListAndStalled(t *testing.T) {
	testkit.ForEachDB(t, "order", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		for i := range 5 {
			if _, _, err := place(t, s, CreateRequest{Account: "acc_1", IdempotencyKey: fmt.Sprint("k", i), HoldID: fmt.Sprint("h", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := place(t, s, CreateRequest{Account: "acc_2", IdempotencyKey: "k", HoldID: "other"}); err != nil {
			t.Fatal(err)
		}
		var holds []string
		cursor := ""
		for range 10 {
			page, err := s.List(ctx, "acc_1", 2, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Orders {
				holds = append(holds, o.HoldID)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if got := fmt.Sprint(holds); got != "[h4 h3 h2 h1 h0]" {
			t.Errorf("List(acc_1) pages = %s, want [h4 h3 h2 h1 h0], newest first, acc_2's order absent", got)
		}
		if _, err := s.List(ctx, "acc_1", 2, "!!"); problem.CodeOf(err) != problem.Invalid {
			t.Errorf("List(bad cursor) = %v, want invalid", err)
		}
		stalled, err := s.Stalled(ctx, t0.Add(time.Hour), 100)
		if err != nil || len(stalled) != 6 {
			t.Errorf("Stalled(an hour on) = %d orders, %v; want all 6 pending", len(stalled), err)
		}
		if stalled, err := s.Stalled(ctx, t0, 100); err != nil || len(stalled) != 0 {
			t.Errorf("Stalled(t0) = %d orders, %v; want none written before t0", len(stalled), err)
		}
	})
}
