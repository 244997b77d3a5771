package graphqlop

import (
	"fmt"
	"strings"
	"testing"
)

func TestCost(t *testing.T) {
	m := CostModel{Lists: map[string]int{"cards": 20, "ticketClasses": 5, "sections": 4, "rows": 10, "seats": 20, "orders.orders": 10}, Mutation: 10}
	tests := []struct {
		name, query string
		vars        map[string]any
		want        int
	}{
		{"leaves cost nothing, but an operation at least 1", `{ __typename }`, nil, 1},
		{"one object", `{ event(id: "e") { id title } }`, nil, 1},
		{"nested objects", `{ event(id: "e") { id venue { name } lowestPrice { minor } } }`, nil, 3},
		{"a list of its default size", `{ event(id: "e") { ticketClasses { id price { minor } } } }`, nil, 1 + 5*2},
		// feed(first: 50) holds 50 cards, each with its price: the feed, 50 × (1 + 1).
		{"a page's first sizes its list", `{ feed(first: 50) { cards { id lowestPrice { minor } } } }`, nil, 1 + 50*2},
		{"without first, the list's default", `{ feed { cards { id } } }`, nil, 1 + 20},
		{"a list's own argument first", `{ feed(first: 50) { cards(limit: 3) { id } } }`, nil, 1 + 3},
		{"last too", `{ feed(last: 2) { cards { id } } }`, nil, 1 + 2},
		{"from a variable", `query($n: Int!) { feed(first: $n) { cards { id } } }`, map[string]any{"n": jsonNumber("40")}, 1 + 40},
		{"from the variable's default", `query($n: Int = 7) { feed(first: $n) { cards { id } } }`, nil, 1 + 7},
		{"first: 0 returns none", `{ feed(first: 0) { cards { id } } }`, nil, 1},
		{"a size that is no count is not one", `query($n: Int) { feed(first: $n) { cards { id } } }`, map[string]any{"n": "many"}, 1 + 20},
		{"a first on a field that is no list sizes nothing else", `{ search(first: 50) { facets { city { value } } } }`, nil, 2 + 1},
		{"nested lists multiply", `{ event(id: "e") { seatMap { sections { rows { seats { id } } } } } }`, nil, 1 + 1 + 4*(1+10*(1+20))},
		{"a parent.field entry", `{ me { orders(first: 5) { orders { id } } } }`, nil, 1 + 1 + 5},
		{"fragments count where spread", `{ a: event(id: "1") { ...E } b: event(id: "2") { ...E } } fragment E on Event { venue { name } }`, nil, 2 * 2},
		{"a fragment in a page counts its list", `{ feed(first: 3) { ...F } } fragment F on Feed { cards { id } }`, nil, 1 + 3},
		{"inline fragments count", `{ event(id: "e") { ... on Event { venue { name } } } }`, nil, 2},
		{"a mutation adds its write", `mutation { placeHold(eventId: "e") { id } }`, nil, 10 + 1},
		{"each write adds", `mutation { a: placeHold(eventId: "e") { id } b: placeHold(eventId: "e") { id } }`, nil, 2 * 11},
		{"huge sizes saturate", `{ feed(first: 99999999999999999999) { cards { id } } }`, nil, MaxCost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, err := Parse(Request{Query: tt.query, Variables: tt.vars}, m)
			if err != nil {
				t.Fatalf("Parse = %v, want no error", err)
			}
			if op.Cost != tt.want {
				t.Errorf("cost = %d, want %d", op.Cost, tt.want)
			}
		})
	}
}

// TestCostOfSpreadFragmentsIsLinear: fragments spreading the next one twice, 40 deep, stand
// for 2^40 selections; the cost walk weighs each fragment once and saturates.
func TestCostOfSpreadFragmentsIsLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("{ ...F0 }\n")
	for i := range 40 {
		fmt.Fprintf(&b, "fragment F%d on Query { a: seats { ...F%d } b: seats { ...F%d } }\n", i, i+1, i+1)
	}
	b.WriteString("fragment F40 on Query { seats { id } }\n")
	op, err := Parse(Request{Query: b.String()}, CostModel{Lists: map[string]int{"seats": 2}})
	if err != nil {
		t.Fatalf("Parse = %v, want no error", err)
	}
	if op.Cost != MaxCost {
		t.Errorf("cost = %d, want it saturated at %d", op.Cost, MaxCost)
	}
}

func TestCostFromJSONVariables(t *testing.T) {
	req, err := FromJSON([]byte(`{"query":"query($n: Int!) { feed(first: $n) { cards { id } } }","variables":{"n":30}}`))
	if err != nil {
		t.Fatal(err)
	}
	op, err := Parse(req, CostModel{Lists: map[string]int{"cards": 20}})
	if err != nil || op.Cost != 31 {
		t.Errorf("Parse = %d, %v; want 31 (30 cards and their feed)", op.Cost, err)
	}
}

// BenchmarkParse measures what the gateway adds to a GraphQL request: reading the body,
// parsing the operation and weighing it (the query of make bench-gateway's GraphQL row).
func BenchmarkParse(b *testing.B) {
	body := []byte(`{"query":"query Event($id: ID!) { event(id: $id) { id title ticketClasses { id name price { currency minor } } } }","variables":{"id":"evt-bench"}}`)
	m := CostModel{Lists: map[string]int{"ticketClasses": 5}}
	b.ReportAllocs()
	for b.Loop() {
		req, err := FromJSON(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Parse(req, m); err != nil {
			b.Fatal(err)
		}
	}
}
