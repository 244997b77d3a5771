package bffweb

import (
	"testing"

	"github.com/99designs/gqlgen/client"

	"boxoffice.dev/bffkit/graphqltest"
)

// TestPlaceHoldPassesTheKey: the input's idempotencyKey reaches inventory, so a retry with
// it returns the first hold instead of placing a second.
func TestPlaceHoldPassesTheKey(t *testing.T) {
	f := newFixture(t, 3, false)
	const place = `mutation($key: String) { placeHold(input: {eventId: "evt-001", ticketClass: "pista", quantity: 1, idempotencyKey: $key}) { id } }`
	var ids []string
	for range 2 {
		var data struct{ PlaceHold struct{ ID string } }
		if errs := graphqltest.Post(t, f.fan, place, &data, client.Var("key", "k-web")); len(errs) > 0 {
			t.Fatalf("placeHold with k-web = %+v", errs)
		}
		ids = append(ids, data.PlaceHold.ID)
	}
	f.svc.Data.Mu.Lock()
	defer f.svc.Data.Mu.Unlock()
	if ids[0] != ids[1] || len(f.svc.Data.Holds) != 1 {
		t.Errorf("placeHold twice with k-web = holds %v, %d kept; want one hold", ids, len(f.svc.Data.Holds))
	}
}
