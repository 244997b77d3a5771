package bffweb

import (
	"testing"

	"github.com/99designs/gqlgen/client"

	"boxoffice.dev/bffkit/graphqltest"
)

// TestOneWritePerRequest: the gateway limits hold attempts, orders and questions per request
// on the REST routes; GraphQL aliases must not turn one request into forty of them.
func TestOneWritePerRequest(t *testing.T) {
	f := newFixture(t, 3, false)
	hold := `placeHold(input: {eventId: "evt-001", ticketClass: "pista", quantity: 1}) { id }`
	for _, tc := range []struct{ name, query string }{
		{"40 aliased holds", "mutation {" + graphqltest.Aliased(hold, 40) + "}"},
		{"45 aliased questions", "{" + graphqltest.Aliased(`ask(question: "jazz?") { tokens }`, 45) + "}"},
		{"a hold and a checkout", `mutation { ` + hold + ` checkout(holdId: "hold-1", idempotencyKey: "k") { id } }`},
		{"a release and a hold", `mutation { releaseHold(id: "hold-1") { id } ` + hold + ` }`},
		{"two questions among reads", `{ event(id: "evt-001") { title } a: ask(question: "jazz?") { text } b: ask(question: "fado?") { text } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			graphqltest.Refused(t, f.fan, f.svc.CallsDuring, tc.query, "invalid", "an operation may carry one write")
		})
	}
}

func TestPlaceHoldRefusesAQuantityOutOfRange(t *testing.T) {
	f := newFixture(t, 3, false)
	place := `mutation($q: Int) { placeHold(input: {eventId: "evt-001", ticketClass: "pista", quantity: $q}) { id quantity } }`
	err := graphqltest.Refused(t, f.fan, f.svc.CallsDuring, place, "invalid", "4294967297 is out of range", client.Var("q", 1<<32+1))
	if err.Extensions["field"] != "quantity" {
		t.Errorf("placeHold(quantity: 4294967297) = %+v, want an error naming quantity (not a hold of 1)", err)
	}
}
