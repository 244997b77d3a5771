package limits

import (
	"errors"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/graphqlop"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/problem"
)

const graphqlDoc = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: holds, match: {method: POST, path: "/v1/events/{id}/holds"}, service: svc, auth: user, limits: [holds-per-account, api-per-ip]}
  - {id: orders, match: {method: POST, path: /v1/orders}, service: svc, auth: user, limits: [orders-per-user-route, api-per-ip]}
  - {id: assistant, match: {method: POST, path: /v1/ask}, service: svc, auth: user, limits: [tokens-per-account, api-per-ip]}
  - id: graphql
    match: {path: /graphql}
    service: svc
    auth: user
    limits: [graphql-per-ip]
    graphql:
      mutations: {placeHold: holds, checkout: orders}
      queries: {ask: assistant}
      cost: {limit: points-per-account, lists: {seats: 20}, mutation: 10}
limits:
  - {id: holds-per-account, key: user, rate: 5/1m, burst: 5}
  - {id: orders-per-user-route, key: user+route, rate: 5/1m, burst: 5}
  - {id: tokens-per-account, key: user, algorithm: fixed_window, rate: 20000/1d, cost_header: X-Tokens}
  - {id: api-per-ip, key: ip, rate: 100/s, burst: 200}
  - {id: graphql-per-ip, key: ip, rate: 100/s, burst: 200}
  - {id: points-per-account, key: user, rate: 50/s, burst: 1000}
`

// spent is a request as the limiter sees it: rule, key and cost.
type spent struct {
	rule, key string
	cost      int
}

func TestBuildGraphQL(t *testing.T) {
	snap := compileDoc(t, graphqlDoc)
	user := authn.Caller{}
	user.User = "usr_1"
	const ip = "ip:203.0.113.9"
	points := func(n int) spent { return spent{"points-per-account", "user:usr_1", n} }
	tests := []struct {
		name, query string
		want        []spent
		wantCharges []string
	}{
		{"a query spends the route's own limits and its cost", `{ me { id } }`, []spent{{"graphql-per-ip", ip, 0}, points(1)}, nil},
		{"lists cost what they may return", `{ event(id: "e") { seats { id } } }`, []spent{{"graphql-per-ip", ip, 0}, points(1 + 20)}, nil},
		{"placeHold spends what a REST hold spends", `mutation { placeHold(eventId: "e") { id } }`,
			[]spent{{"holds-per-account", "user:usr_1", 0}, {"api-per-ip", ip, 0}, points(11)}, nil},
		// Keyed by the REST route's id: the same key as POST /v1/orders builds.
		{"checkout keyed as the REST route", `mutation { checkout(holdId: "h", idempotencyKey: "k") { id } }`,
			[]spent{{"orders-per-user-route", "{user:usr_1}:route:orders", 0}, {"api-per-ip", ip, 0}, points(11)}, nil},
		{"aliases spend twice on one request", `mutation { a: placeHold(eventId: "e") { id } b: placeHold(eventId: "e") { id } }`,
			[]spent{{"holds-per-account", "user:usr_1", 2}, {"api-per-ip", ip, 2}, points(22)}, nil},
		{"two writes, each its own budget", `mutation { placeHold(eventId: "e") { id } checkout(holdId: "h", idempotencyKey: "k") { id } }`,
			[]spent{{"holds-per-account", "user:usr_1", 0}, {"api-per-ip", ip, 2}, {"orders-per-user-route", "{user:usr_1}:route:orders", 0}, points(22)}, nil},
		{"a mutation that writes nothing is still a request", `mutation { __typename }`, []spent{{"graphql-per-ip", ip, 0}, points(1)}, nil},
		// ask is a query that acts: it spends the assistant's limits, its tokens charged after.
		{"a mapped query field spends its route's limits", `{ ask(question: "q") { text } }`,
			[]spent{{"tokens-per-account", "user:usr_1", 0}, {"api-per-ip", ip, 0}, points(1)}, []string{"tokens-per-account"}},
		{"with other fields, the route's own too", `{ me { id } ask(question: "q") { text } }`,
			[]spent{{"graphql-per-ip", ip, 0}, {"tokens-per-account", "user:usr_1", 0}, {"api-per-ip", ip, 0}, points(2)}, []string{"tokens-per-account"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := snap.Route("graphql")
			op, err := graphqlop.Parse(graphqlop.Request{Query: tt.query}, rt.Cost.Model)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("POST", "/graphql", nil)
			b, err := Build(snap, Subject{Route: rt, Caller: user, IP: netip.MustParseAddr("203.0.113.9"), Request: r, Operation: &op})
			if err != nil {
				t.Fatalf("Build() = %v, want no error", err)
			}
			var got []spent
			for _, q := range b.Requests {
				got = append(got, spent{q.Rule.ID, q.Key, q.Cost})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Build() = %v, want %v", got, tt.want)
			}
			if b.Cost != len(b.Requests)-1 {
				t.Errorf("Build().Cost = %d, want %d, the points request", b.Cost, len(b.Requests)-1)
			}
			var charges []string
			for _, c := range b.Charges {
				charges = append(charges, c.Request.Rule.ID)
			}
			if !slices.Equal(charges, tt.wantCharges) {
				t.Errorf("Build() charges = %v, want %v", charges, tt.wantCharges)
			}
		})
	}

	t.Run("no operation read keeps the route's limits", func(t *testing.T) {
		r := httptest.NewRequest("OPTIONS", "/graphql", nil)
		b, err := Build(snap, Subject{Route: snap.Route("graphql"), Caller: user, IP: netip.MustParseAddr("203.0.113.9"), Request: r})
		if err != nil || len(b.Requests) != 1 || b.Requests[0].Rule.ID != "graphql-per-ip" || b.Cost != -1 {
			t.Errorf("Build() = %+v, %v; want the route's graphql-per-ip alone, no points", b, err)
		}
	})
}

func TestBuildGraphQLRefusesUnmappedWrites(t *testing.T) {
	snap := compileDoc(t, graphqlDoc)
	rt := snap.Route("graphql")
	op, err := graphqlop.Parse(graphqlop.Request{Query: `mutation { placeHold(eventId: "e") { id } releaseHold(id: "h") { id } }`}, rt.Cost.Model)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(snap, Subject{Route: rt, Caller: authn.Caller{}, Request: httptest.NewRequest("POST", "/graphql", nil), Operation: &op})
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.Invalid || !strings.Contains(pe.Message, "mutation releaseHold is not in the gateway's policy") {
		t.Fatalf("Build() = %v, %v, want an invalid problem naming releaseHold", b, err)
	}
}

func TestCostOf(t *testing.T) {
	snap := compileDoc(t, graphqlDoc)
	rt := snap.Route("graphql")
	rule := rt.Cost.Limit.Rule
	b := Built{Requests: []ratelimit.Request{{Rule: rule, Key: "user:u", Cost: 120}}, Cost: 0}
	res := ratelimit.Result{Rules: []ratelimit.Decision{{Rule: rule.ID, Allowed: true, Limit: rule.Limit, Remaining: 880, Window: rule.Window}}}
	got := CostOf(b, res)
	want := QueryCost{Requested: 120, Remaining: 880, Maximum: 1000, RestoreRate: 50, Policy: "points-per-account"}
	if got == nil || *got != want {
		t.Errorf("CostOf = %+v, want %+v", got, want)
	}
	if CostOf(Built{Cost: -1}, res) != nil {
		t.Error("CostOf without points = a report, want nil")
	}
}
