package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"boxoffice.dev/bffkit/servicetest"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
)

// TestDeadlines: behind a service answering 300 ms late, a read with a 100 ms deadline gives
// up, a write with a long one gets its answer.
func TestDeadlines(t *testing.T) {
	svc := servicetest.Start(t, 1)
	svc.Inventory.SetLatency(300 * time.Millisecond)
	conn := WithDeadlines(svc.Inventory.Dial(t, 0), Deadlines{Read: 100 * time.Millisecond, Write: 5 * time.Second})
	inv := inventoryv1.NewInventoryClient(conn)
	ctx := identity.OutgoingContext(context.Background(), identity.Identity{User: "acc-1"})

	h, err := inv.PlaceHold(ctx, &inventoryv1.PlaceHoldRequest{EventId: "evt-001", Class: "pista", Quantity: 1})
	if err != nil {
		t.Fatalf("PlaceHold (a write) 300 ms late = %v, want the hold", err)
	}
	_, err = inv.GetHold(ctx, &inventoryv1.GetHoldRequest{HoldId: h.GetId()})
	if problem.CodeOf(err) != problem.Unavailable {
		t.Errorf("GetHold (a read) 300 ms late = %v, want unavailable after its 100 ms", err)
	}
}

func TestDeadlinesFor(t *testing.T) {
	d := Deadlines{Read: time.Second, Write: 10 * time.Second}
	for method, want := range map[string]time.Duration{
		inventoryv1.Inventory_PlaceHold_FullMethodName:  10 * time.Second,
		inventoryv1.Inventory_GetSeatMap_FullMethodName: time.Second,
	} {
		if got := d.For(method); got != want {
			t.Errorf("For(%s) = %v, want %v", method, got, want)
		}
	}
}

func TestWriteError(t *testing.T) {
	lost := &problem.Error{Code: problem.Unavailable, Message: "inventory is unavailable"}
	for _, tc := range []struct {
		name string
		err  error
		key  string
		code string // "" = err returned as it is
		says string
	}{
		{"lost with a key", lost, "k-1", CodeOutcomeUnknown, "retrying with the same idempotencyKey is safe"},
		{"lost without a key", lost, "", CodeOutcomeUnknown, "a retry may do it twice"},
		{"refused", problem.New(problem.Conflict, "seats taken"), "k-1", "", "seats taken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteError(context.Background(), tc.err, "placeHold", Retry(tc.key))
			g, isGQL := errors.AsType[*gqlerror.Error](err)
			switch {
			case tc.code == "" && err != tc.err:
				t.Errorf("WriteError(%v) = %v, want it unchanged", tc.err, err)
			case tc.code != "" && (!isGQL || g.Extensions["code"] != tc.code):
				t.Errorf("WriteError(%v) = %#v, want extensions.code %s", tc.err, err, tc.code)
			case !strings.Contains(err.Error(), tc.says):
				t.Errorf("WriteError(%v) = %q, want it to say %q", tc.err, err, tc.says)
			}
		})
	}
}
