package bffmobile

import (
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"

	"boxoffice.dev/bffkit/graphqltest"
	"boxoffice.dev/bffkit/upstream"
)

const placeKeyed = `mutation($key: String) { placeHold(eventId: "evt-001", ticketClass: "pista", quantity: 2, idempotencyKey: $key) { id status } }`

type placed struct {
	PlaceHold *struct{ ID, Status string }
}

// holdsOf is how many holds the fake inventory keeps for account.
func (f *fixture) holdsOf(account string) int {
	f.svc.Data.Mu.Lock()
	defer f.svc.Data.Mu.Unlock()
	n := 0
	for _, h := range f.svc.Data.Holds {
		if h.GetAccount() == account {
			n++
		}
	}
	return n
}

// TestWriteOutlivesReadDeadline: inventory answers a hold 1.2 s late, past the 800 ms a read
// may take; the hold is a write, with the longer write deadline, and the fan gets it.
func TestWriteOutlivesReadDeadline(t *testing.T) {
	f := newFixture(t, 3)
	f.svc.Inventory.SetLatency(1200 * time.Millisecond)
	var data placed
	if errs := graphqltest.Post(t, f.fan, placeKeyed, &data, client.Var("key", "k-slow")); len(errs) > 0 {
		t.Fatalf("placeHold answered 1.2 s late = %+v, want the hold", errs)
	}
	if data.PlaceHold == nil || data.PlaceHold.Status != "ACTIVE" || f.holdsOf(fan) != 1 {
		t.Errorf("placeHold = %+v with %d holds kept, want one active hold", data.PlaceHold, f.holdsOf(fan))
	}
}

// TestLostWriteIsOutcomeUnknown: past the write deadline the hold is placed but its answer is
// lost. The fan is told OUTCOME_UNKNOWN, not a failure, and the retry with the same key gets
// the one hold that exists; an order likewise.
func TestLostWriteIsOutcomeUnknown(t *testing.T) {
	f := newFixtureWith(t, 3, map[string]string{"BFF_WRITE_TIMEOUT": "300ms"})
	f.svc.Inventory.SetLatency(time.Second)
	errs := graphqltest.Post(t, f.fan, placeKeyed, nil, client.Var("key", "k-lost"))
	if len(errs) != 1 || errs[0].Code() != upstream.CodeOutcomeUnknown || !strings.Contains(errs[0].Message, upstream.RetryKeyed) || errs[0].Where() != "placeHold" {
		t.Fatalf("placeHold past the write deadline = %+v, want one %s error on placeHold saying a retry with the key is safe", errs, upstream.CodeOutcomeUnknown)
	}
	if n := f.holdsOf(fan); n != 1 {
		t.Fatalf("holds kept after the lost answer = %d, want 1 (the service did the work)", n)
	}

	f.svc.Inventory.SetLatency(0)
	var data placed
	if errs := graphqltest.Post(t, f.fan, placeKeyed, &data, client.Var("key", "k-lost")); len(errs) > 0 || data.PlaceHold == nil {
		t.Fatalf("retry with k-lost = %+v, want the hold", errs)
	}
	if n := f.holdsOf(fan); n != 1 {
		t.Errorf("holds kept after the retry = %d, want still 1", n)
	}

	// Without a key the fan is told that a retry may hold twice.
	f.svc.Inventory.SetLatency(time.Second)
	errs = graphqltest.Post(t, f.fan, placeKeyed, nil)
	if len(errs) != 1 || errs[0].Code() != upstream.CodeOutcomeUnknown || !strings.Contains(errs[0].Message, upstream.RetryUnkeyed) {
		t.Errorf("placeHold without a key past the deadline = %+v, want %s saying a retry may do it twice", errs, upstream.CodeOutcomeUnknown)
	}

	const order = `mutation($hold: ID!) { createOrder(holdId: $hold, idempotencyKey: "o-lost") { id } }`
	f.svc.Order.SetLatency(time.Second)
	errs = graphqltest.Post(t, f.fan, order, nil, client.Var("hold", data.PlaceHold.ID))
	if len(errs) != 1 || errs[0].Code() != upstream.CodeOutcomeUnknown {
		t.Fatalf("createOrder past the write deadline = %+v, want %s", errs, upstream.CodeOutcomeUnknown)
	}
	f.svc.Order.SetLatency(0)
	if errs := graphqltest.Post(t, f.fan, order, nil, client.Var("hold", data.PlaceHold.ID)); len(errs) > 0 {
		t.Fatalf("retry of createOrder = %+v, want the order", errs)
	}
	f.svc.Data.Mu.Lock()
	defer f.svc.Data.Mu.Unlock()
	if n := len(f.svc.Data.Orders); n != 1 {
		t.Errorf("orders after a lost answer and a retry = %d, want 1", n)
	}
}
