package payment

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// newTestStore migrates db and returns a Store whose clock advances a microsecond a call,
// so rows get distinct, ordered timestamps.
func newTestStore(t *testing.T, db *sqldb.DB) *Store {
	t.Helper()
	if err := db.Migrate(context.Background(), Migrations()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	s := &Store{DB: db}
	s.Clock = testkit.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Microsecond).Clock()
	return s
}

func TestStoreChargeIsIdempotentByKey(t *testing.T) {
	testkit.ForEachDB(t, "payment", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		first, created, err := s.Charge(ctx, validCharge())
		if err != nil || !created || first.Status != Succeeded {
			t.Fatalf("Charge = %+v, %v, %v; want a new succeeded charge", first, created, err)
		}
		again, created, err := s.Charge(ctx, validCharge())
		if err != nil || created || again.ID != first.ID {
			t.Fatalf("Charge again = %s, created %v, %v; want %s, not created", again.ID, created, err, first.ID)
		}
		other := validCharge()
		other.Amount.Minor++
		if _, _, err := s.Charge(ctx, other); problem.CodeOf(err) != problem.Unprocessable {
			t.Fatalf("Charge(same key, other amount) = %v, want unprocessable", err)
		}
		declined := validCharge()
		declined.IdempotencyKey, declined.Amount.Minor = "k2", 4013
		if c, _, err := s.Charge(ctx, declined); err != nil || c.Status != Declined {
			t.Fatalf("Charge(4013) = %+v, %v; want declined", c, err)
		}
	})
}

func TestStoreConcurrentChargesWithOneKeyChargeOnce(t *testing.T) {
	testkit.ForEachDB(t, "payment", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		const callers = 20
		ids := make([]string, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				c, _, err := s.Charge(ctx, validCharge())
				if err != nil {
					t.Errorf("Charge: %v", err)
				}
				ids[i] = c.ID
			})
		}
		wg.Wait()
		for i, id := range ids {
			if id != ids[0] {
				t.Errorf("caller %d got charge %q, caller 0 got %q; want one charge", i, id, ids[0])
			}
		}
		page, err := s.List(ctx, "ord_1", 100, "")
		if err != nil || len(page.Charges) != 1 {
			t.Fatalf("List(ord_1) = %d charges, %v; want 1", len(page.Charges), err)
		}
	})
}

func TestStoreRefund(t *testing.T) {
	testkit.ForEachDB(t, "payment", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		c, _, err := s.Charge(ctx, validCharge())
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range []RefundRequest{{ChargeID: c.ID}, {IdempotencyKey: c.IdempotencyKey}} {
			got, err := s.Refund(ctx, req)
			if err != nil || got.Status != Refunded || got.ID != c.ID {
				t.Fatalf("Refund(%+v) = %+v, %v; want %s refunded", req, got, err, c.ID)
			}
		}
		stored, err := s.Get(ctx, c.ID, "")
		if err != nil || stored.Status != Refunded {
			t.Fatalf("Get after refund = %+v, %v; want refunded", stored, err)
		}
		if _, err := s.Refund(ctx, RefundRequest{ChargeID: "ch_missing"}); problem.CodeOf(err) != problem.NotFound {
			t.Errorf("Refund(unknown id) = %v, want not found", err)
		}
	})
}

func TestStoreVoidedKeyBlocksALateCharge(t *testing.T) {
	testkit.ForEachDB(t, "payment", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		void, err := s.Refund(ctx, RefundRequest{IdempotencyKey: "k1", OrderID: "ord_1", Reason: "timed out"})
		if err != nil || void.Status != Voided {
			t.Fatalf("Refund(never charged key) = %+v, %v; want voided", void, err)
		}
		late, created, err := s.Charge(ctx, validCharge())
		if err != nil || created || late.Status != Voided || late.ID != void.ID {
			t.Fatalf("Charge after void = %+v, created %v, %v; want the voided record", late, created, err)
		}
		got, err := s.Get(ctx, "", "k1")
		if err != nil || got.Status != Voided {
			t.Fatalf("Get(k1) = %+v, %v; want voided", got, err)
		}
	})
}

func TestStoreListPages(t *testing.T) {
	testkit.ForEachDB(t, "payment", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		for i := range 5 {
			r := validCharge()
			r.IdempotencyKey, r.OrderID = fmt.Sprint("k", i), fmt.Sprint("ord_", i%2)
			if _, _, err := s.Charge(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		var keys []string
		cursor := ""
		for range 10 {
			page, err := s.List(ctx, "", 2, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range page.Charges {
				keys = append(keys, c.IdempotencyKey)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if got := fmt.Sprint(keys); got != "[k0 k1 k2 k3 k4]" {
			t.Errorf("List pages = %s, want [k0 k1 k2 k3 k4]", got)
		}
		page, err := s.List(ctx, "ord_0", 10, "")
		if err != nil || len(page.Charges) != 3 || page.Next != "" {
			t.Errorf("List(ord_0) = %d charges, next %q, %v; want 3 and no next", len(page.Charges), page.Next, err)
		}
		if _, err := s.List(ctx, "", 2, "garbage!"); problem.CodeOf(err) != problem.Invalid {
			t.Errorf("List(bad cursor) = %v, want invalid", err)
		}
	})
}
