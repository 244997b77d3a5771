package notification

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

var testIDs = ids.Sequence()

// newTestStore migrates db and returns a Store with a clock that advances a millisecond a
// call and counting ids.
func newTestStore(t *testing.T, db *sqldb.DB) *Store {
	t.Helper()
	if err := db.Migrate(context.Background(), Migrations()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return &Store{DB: db,
		Clock: testkit.NewClock(time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC), time.Millisecond).Clock(),
		IDs:   testIDs,
	}
}

func TestStoreAddIsOncePerEvent(t *testing.T) {
	testkit.ForEachDB(t, "notification", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		m := Message{EventID: "ord_1.confirmed", Account: "acc_1", Kind: OrderConfirmed, Subject: "s", Body: "b", Push: "p"}
		var added atomic.Int32
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				_, ok, err := s.Add(ctx, m)
				if err != nil {
					t.Errorf("Add: %v", err)
				}
				if ok {
					added.Add(1)
				}
			})
		}
		wg.Wait()
		page, err := s.List(ctx, "acc_1", 100, "")
		if err != nil || len(page.Messages) != 1 || added.Load() != 1 {
			t.Errorf("after 10 concurrent Adds of one event: %d stored, %d reported added, %v; want 1 and 1", len(page.Messages), added.Load(), err)
		}
	})
}

func TestStoreListPages(t *testing.T) {
	testkit.ForEachDB(t, "notification", func(t *testing.T, db *sqldb.DB) {
		s, ctx := newTestStore(t, db), context.Background()
		for i := range 5 {
			if _, _, err := s.Add(ctx, Message{EventID: fmt.Sprint("e", i), Account: "acc_1", Kind: OrderFailed}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.Add(ctx, Message{EventID: "other", Account: "acc_2", Kind: OrderFailed}); err != nil {
			t.Fatal(err)
		}
		var events []string
		cursor := ""
		for range 10 {
			page, err := s.List(ctx, "acc_1", 2, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page.Messages {
				events = append(events, m.EventID)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if got := fmt.Sprint(events); got != "[e4 e3 e2 e1 e0]" {
			t.Errorf("List(acc_1) pages = %s, want [e4 e3 e2 e1 e0]", got)
		}
		if _, err := s.List(ctx, "acc_1", 2, "%%"); problem.CodeOf(err) != problem.Invalid {
			t.Errorf("List(bad cursor) = %v, want invalid", err)
		}
	})
}
