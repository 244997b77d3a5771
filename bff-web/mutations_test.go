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

// TestServiceProblemsKeepTheirCodeAndField: a service's problem crosses gRPC and reaches the
// client with its own code and the field at fault, not a code guessed from gRPC's status.
func TestServiceProblemsKeepTheirCodeAndField(t *testing.T) {
	f := newFixture(t, 3, false)
	var held [2]struct{ PlaceHold struct{ ID string } }
	for i, seat := range []string{"B-3-1", "B-3-2"} {
		place := `mutation { placeHold(input: {eventId: "evt-001", seats: ["` + seat + `"]}) { id } }`
		if errs := graphqltest.Post(t, f.fan, place, &held[i]); len(errs) > 0 {
			t.Fatalf("placeHold %s: %+v", seat, errs)
		}
	}
	checkout := `mutation($hold: ID!) { checkout(holdId: $hold, idempotencyKey: "k-1") { id } }`
	if errs := graphqltest.Post(t, f.fan, checkout, nil, client.Var("hold", held[0].PlaceHold.ID)); len(errs) > 0 {
		t.Fatalf("checkout: %+v", errs)
	}
	for _, tc := range []struct {
		name, query, wantCode, wantField string
		opts                             []client.Option
	}{
		{"a seat that is not on the map", `mutation { placeHold(input: {eventId: "evt-001", seats: ["Z-9-9"]}) { id } }`, "invalid", "seats", nil},
		{"a key used for another hold", checkout, "unprocessable", "Idempotency-Key", []client.Option{client.Var("hold", held[1].PlaceHold.ID)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := graphqltest.Post(t, f.fan, tc.query, nil, tc.opts...)
			if len(errs) != 1 || errs[0].Code() != tc.wantCode || errs[0].Extensions["field"] != tc.wantField {
				t.Errorf("errors = %+v, want one %s naming %s", errs, tc.wantCode, tc.wantField)
			}
		})
	}
}
