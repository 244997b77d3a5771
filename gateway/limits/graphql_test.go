package limits

import (
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/platform/problem"
)

const graphqlDoc = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: holds, match: {method: POST, path: "/v1/events/{id}/holds"}, service: svc, auth: user, limits: [holds-per-account, api-per-ip]}
  - {id: orders, match: {method: POST, path: /v1/orders}, service: svc, auth: user, limits: [orders-per-user-route, api-per-ip]}
  - id: graphql
    match: {path: /graphql}
    service: svc
    auth: user
    limits: [graphql-per-ip]
    graphql: {mutations: {placeHold: holds, checkout: orders}}
limits:
  - {id: holds-per-account, key: user, rate: 5/1m, burst: 5}
  - {id: orders-per-user-route, key: user+route, rate: 5/1m, burst: 5}
  - {id: api-per-ip, key: ip, rate: 100/s, burst: 200}
  - {id: graphql-per-ip, key: ip, rate: 100/s, burst: 200}
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
	tests := []struct {
		name, method, query string
		want                []spent
	}{
		{"a query spends the route's own limits", "POST", `{ me { id } }`, []spent{{"graphql-per-ip", ip, 0}}},
		{"placeHold spends what a REST hold spends", "POST", `mutation { placeHold(eventId: "e") { id } }`,
			[]spent{{"holds-per-account", "user:usr_1", 0}, {"api-per-ip", ip, 0}}},
		// Keyed by the REST route's id: the same key as POST /v1/orders builds.
		{"checkout keyed as the REST route", "POST", `mutation { checkout(holdId: "h", idempotencyKey: "k") { id } }`,
			[]spent{{"orders-per-user-route", "{user:usr_1}:route:orders", 0}, {"api-per-ip", ip, 0}}},
		{"aliases spend twice on one request", "POST", `mutation { a: placeHold(eventId: "e") { id } b: placeHold(eventId: "e") { id } }`,
			[]spent{{"holds-per-account", "user:usr_1", 2}, {"api-per-ip", ip, 2}}},
		{"two writes, each its own budget", "POST", `mutation { placeHold(eventId: "e") { id } checkout(holdId: "h", idempotencyKey: "k") { id } }`,
			[]spent{{"holds-per-account", "user:usr_1", 0}, {"api-per-ip", ip, 2}, {"orders-per-user-route", "{user:usr_1}:route:orders", 0}}},
		{"GET reads the URL's query", "GET", `mutation { placeHold(eventId: "e") { id } }`,
			[]spent{{"holds-per-account", "user:usr_1", 0}, {"api-per-ip", ip, 0}}},
		{"a mutation that writes nothing is still a request", "POST", `mutation { __typename }`, []spent{{"graphql-per-ip", ip, 0}}},
		{"a method without an operation keeps the route's limits", "OPTIONS", "", []spent{{"graphql-per-ip", ip, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"query": tt.query, "variables": map[string]any{}})
			r := httptest.NewRequest(tt.method, "/graphql", strings.NewReader(string(body)))
			if tt.method == "GET" {
				r = httptest.NewRequest("GET", "/graphql?"+url.Values{"query": {tt.query}}.Encode(), nil)
			}
			reqs, _, err := Build(snap, Subject{Route: snap.Route("graphql"), Caller: user, IP: netip.MustParseAddr("203.0.113.9"), Request: r})
			if err != nil {
				t.Fatalf("Build() = %v, want no error", err)
			}
			var got []spent
			for _, q := range reqs {
				got = append(got, spent{q.Rule.ID, q.Key, q.Cost})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Build() = %v, want %v", got, tt.want)
			}
			if b, _ := io.ReadAll(r.Body); tt.method == "POST" && string(b) != string(body) {
				t.Errorf("body after Build = %q, want it whole for the upstream", b)
			}
		})
	}
}

func TestBuildGraphQLRefuses(t *testing.T) {
	snap := compileDoc(t, graphqlDoc)
	tests := []struct{ name, body, wantIn string }{
		{"an unmapped mutation", `{"query":"mutation { placeHold(eventId: \"e\") { id } releaseHold(id: \"h\") { id } }"}`, "mutation releaseHold is not in the gateway's policy"},
		{"not GraphQL", `{"query":"mutation { placeHold(eventId: \"e\" "}`, "not valid GraphQL"},
		{"not JSON", `mutation { placeHold }`, "want a JSON object"},
		{"a subscription", `{"query":"subscription { holdExpired { id } }"}`, "subscriptions are not offered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/graphql", strings.NewReader(tt.body))
			reqs, _, err := Build(snap, Subject{Route: snap.Route("graphql"), Caller: authn.Caller{}, Request: r})
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Code != problem.Invalid || !strings.Contains(pe.Message, tt.wantIn) {
				t.Fatalf("Build() = %v, %v, want an invalid problem containing %q", reqs, err, tt.wantIn)
			}
		})
	}
}
