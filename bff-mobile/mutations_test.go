package bffmobile

import (
	"testing"

	"github.com/99designs/gqlgen/client"

	"boxoffice.dev/bffkit/graphqltest"
)

// TestOneWritePerRequest: the gateway limits hold attempts, orders and queue joins per
// request on the REST routes; GraphQL aliases must not turn one request into forty of them.
func TestOneWritePerRequest(t *testing.T) {
	f := newFixture(t, 3)
	hold := `placeHold(eventId: "evt-001", ticketClass: "pista", quantity: 1) { id }`
	for _, tc := range []struct{ name, query string }{
		{"40 aliased holds", "mutation {" + graphqltest.Aliased(hold, 40) + "}"},
		{"a join and a hold", `mutation { joinQueue(eventId: "evt-002") { state } ` + hold + ` }`},
		{"a hold and an order", `mutation { ` + hold + ` createOrder(holdId: "hold-1", idempotencyKey: "k") { id } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			graphqltest.Refused(t, f.fan, f.svc.CallsDuring, tc.query, "invalid", "an operation may carry one write")
		})
	}
}

func TestPlaceHoldRefusesAQuantityOutOfRange(t *testing.T) {
	f := newFixture(t, 3)
	place := `mutation($q: Int) { placeHold(eventId: "evt-001", ticketClass: "pista", quantity: $q) { id quantity } }`
	err := graphqltest.Refused(t, f.fan, f.svc.CallsDuring, place, "invalid", "4294967297 is out of range", client.Var("q", 1<<32+1))
	if err.Extensions["field"] != "quantity" {
		t.Errorf("placeHold(quantity: 4294967297) = %+v, want an error naming quantity (not a hold of 1)", err)
	}
}
