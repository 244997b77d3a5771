package gateway

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// shippedPolicy is gateway/policy.yaml with every instance replaced by the test's backend:
// the end-to-end tests below hold the policy that ships, not a copy of it.
func shippedPolicy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`"http://127\.0\.0\.1:\d+"`).ReplaceAllString(string(b), `"BACKEND"`)
}

// graphQL is the POST body of a GraphQL request.
func graphQL(t *testing.T, query string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"query": query, "variables": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGraphQLSharesRESTBudgets runs the shipped policy: a write through a BFF spends the
// budget of the REST route doing the same write, so one account has one budget whichever
// door it uses.
func TestGraphQLSharesRESTBudgets(t *testing.T) {
	ks := newKeySet(t, "k1")
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, shippedPolicy(t), be, map[string]string{"REDIS_URL": rd.URL(), "AUTH_URL": ks.URL})
	bearer := func(user string) []string {
		return []string{"Authorization", "Bearer " + ks.sign(t, "k1", user, time.Now(), time.Minute)}
	}
	ana, bo, cy := bearer("usr_ana"), bearer("usr_bo"), bearer("usr_cy")
	hold := graphQL(t, `mutation Hold($e: ID!) { placeHold(eventId: $e, quantity: 1) { id } }`)
	webHold := graphQL(t, `mutation { placeHold(input: {eventId: "e1", quantity: 1}) { id } }`)

	type step struct {
		name, path, body string
		who              []string
		status           int
		wantIn           string // in the body of a refusal
	}
	run := func(t *testing.T, steps []step) {
		t.Helper()
		for _, s := range steps {
			hits := be.hits.Load()
			res := gw.call(t, "POST", s.path, s.body, s.who...)
			if res.status != s.status || !strings.Contains(string(res.body), s.wantIn) {
				t.Fatalf("%s: POST %s = %d %s, want %d containing %q", s.name, s.path, res.status, res.body, s.status, s.wantIn)
			}
			if forwarded := be.hits.Load() > hits; forwarded != (s.status == http.StatusOK) {
				t.Errorf("%s: reached the backend = %v, want %v", s.name, forwarded, s.status == http.StatusOK)
			}
		}
	}

	t.Run("holds", func(t *testing.T) {
		run(t, []step{
			{"REST hold 1", "/v1/events/e1/holds", `{"quantity":1}`, ana, 200, ""},
			{"REST hold 2", "/v1/events/e1/holds", `{"quantity":1}`, ana, 200, ""},
			{"mobile hold 3", "/graphql/mobile", hold, ana, 200, ""},
			{"mobile hold 4", "/graphql/mobile", hold, ana, 200, ""},
			{"web hold 5", "/graphql/web", webHold, ana, 200, ""},
			{"web hold 6", "/graphql/web", webHold, ana, 429, "holds-per-account"},
			{"mobile hold 6", "/graphql/mobile", hold, ana, 429, "holds-per-account"},
			{"REST hold 6", "/v1/events/e1/holds", `{"quantity":1}`, ana, 429, "holds-per-account"},
			// A query is not a write: it keeps the route's own limits.
			{"mobile query", "/graphql/mobile", graphQL(t, `{ events { id } }`), ana, 200, ""},
			{"another account", "/graphql/mobile", hold, bo, 200, ""},
		})
	})

	t.Run("orders", func(t *testing.T) {
		run(t, []step{
			{"REST order 1", "/v1/orders", `{"hold_id":"h1"}`, cy, 200, ""},
			{"mobile createOrder 2", "/graphql/mobile", graphQL(t, `mutation { createOrder(holdId: "h1", idempotencyKey: "k1") { id } }`), cy, 200, ""},
			// Aliases are two calls: two orders of the budget in one request.
			{"web checkout 3 and 4", "/graphql/web", graphQL(t, `mutation { a: checkout(holdId: "h1", idempotencyKey: "k1") { id } b: checkout(holdId: "h2", idempotencyKey: "k2") { id } }`), cy, 200, ""},
			{"two checkouts past the budget", "/graphql/web", graphQL(t, `mutation { a: checkout(holdId: "h1", idempotencyKey: "k1") { id } b: checkout(holdId: "h2", idempotencyKey: "k2") { id } }`), cy, 429, "orders-per-account"},
			{"web checkout 5", "/graphql/web", graphQL(t, `mutation { checkout(holdId: "h3", idempotencyKey: "k3") { id } }`), cy, 200, ""},
			{"REST order 6", "/v1/orders", `{"hold_id":"h1"}`, cy, 429, "orders-per-account"},
			{"mobile createOrder 6", "/graphql/mobile", graphQL(t, `mutation { createOrder(holdId: "h1", idempotencyKey: "k1") { id } }`), cy, 429, "orders-per-account"},
		})
	})

	t.Run("refused", func(t *testing.T) {
		run(t, []step{
			// releaseHold is mapped on web only: mobile has no such mutation, and the gateway
			// lets no unmapped write through.
			{"unmapped mutation", "/graphql/mobile", graphQL(t, `mutation { releaseHold(id: "h1") { id } }`), bo, 400, "mutation releaseHold is not in the gateway's policy"},
			{"not GraphQL", "/graphql/web", graphQL(t, `mutation { placeHold(input: "private-note" `), bo, 400, "not valid GraphQL"},
			{"not JSON", "/graphql/web", `mutation { placeHold }`, bo, 400, "want a JSON object"},
		})
		res := gw.call(t, "POST", "/graphql/web", graphQL(t, `mutation { "private-note" }`), bo...)
		if res.status != 400 || res.header.Get("Content-Type") != "application/problem+json" || strings.Contains(string(res.body), "private-note") {
			t.Errorf("invalid document = %d %s %s, want a 400 problem+json that does not echo it", res.status, res.header.Get("Content-Type"), res.body)
		}
	})
}
