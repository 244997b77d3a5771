package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
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

// TestGraphQLQueryCost runs the shipped policy: every operation spends its calculated cost
// from graphql-points-per-account (3,000 at most, 200 restored a second), the BFF is told
// the cost to return as extensions.cost, and an operation the budget cannot pay now is
// refused with 429, Retry-After and a GraphQL error RATE_LIMITED naming the policy.
func TestGraphQLQueryCost(t *testing.T) {
	ks := newKeySet(t, "k1")
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, shippedPolicy(t), be, map[string]string{"REDIS_URL": rd.URL(), "AUTH_URL": ks.URL})
	ana := []string{"Authorization", "Bearer " + ks.sign(t, "k1", "usr_ana", time.Now(), time.Minute)}

	// 900 hits, each with its venue and price: 1 + 900 × 3 points.
	const bigSearch = `query($n: Int!) { search(first: $n) { hits { id venue { name } minPrice { minor } } } }`
	big := func(n int) string {
		b, _ := json.Marshal(map[string]any{"query": bigSearch, "variables": map[string]any{"n": n}})
		return string(b)
	}
	costOf := func(t *testing.T, res response) limitsCost {
		t.Helper()
		var c limitsCost
		if err := json.Unmarshal([]byte(res.seen(t).QueryCost), &c); err != nil {
			t.Fatalf("cost header sent to the BFF: %v", err)
		}
		return c
	}

	res := gw.call(t, "POST", "/graphql/web", big(900), ana...)
	c := costOf(t, res)
	if c.Requested != 2701 || c.Maximum != 3000 || c.RestoreRate != 200 || c.Policy != "graphql-points-per-account" || c.Remaining < 299 || c.Remaining > 999 {
		t.Errorf("cost of 900 hits = %+v, want 2701 requested of 3000, about 299 remaining, 200 restored a second", c)
	}
	if !strings.Contains(res.header.Get("RateLimit"), `"graphql-points-per-account";r=`) {
		t.Errorf("RateLimit = %q, want the points budget in it", res.header.Get("RateLimit"))
	}

	hits := be.hits.Load()
	res = gw.call(t, "POST", "/graphql/web", big(900), ana...)
	var refused struct {
		Errors []struct {
			Extensions struct {
				Code       string `json:"code"`
				Policy     string `json:"policy"`
				RetryAfter int    `json:"retryAfterSeconds"`
			} `json:"extensions"`
		} `json:"errors"`
		Extensions struct {
			Cost limitsCost `json:"cost"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(res.body, &refused); err != nil || res.status != http.StatusTooManyRequests {
		t.Fatalf("the same again = %d %s (%v), want 429", res.status, res.body, err)
	}
	after, _ := strconv.Atoi(res.header.Get("Retry-After"))
	if len(refused.Errors) != 1 || refused.Errors[0].Extensions.Code != "RATE_LIMITED" || refused.Errors[0].Extensions.Policy != "graphql-points-per-account" ||
		after < 1 || refused.Errors[0].Extensions.RetryAfter != after || refused.Extensions.Cost.Requested != 2701 {
		t.Errorf("refusal = Retry-After %q, %s; want a RATE_LIMITED error naming graphql-points-per-account, its wait and the cost", res.header.Get("Retry-After"), res.body)
	}
	if be.hits.Load() != hits {
		t.Error("the refused operation reached the BFF")
	}

	// A cheap query still fits in what is left.
	res = gw.call(t, "POST", "/graphql/web", graphQL(t, `{ event(id: "e1") { id title } }`), ana...)
	if c := costOf(t, res); c.Requested != 1 {
		t.Errorf("cost of one event = %+v, want 1", c)
	}

	// More than the budget ever holds is the request's fault: 400, no wait would help.
	res = gw.call(t, "POST", "/graphql/web", big(1000), ana...)
	if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "costs 3001 points, more than the 3000") {
		t.Errorf("1000 hits = %d %s, want 400 saying it costs more than the budget holds", res.status, res.body)
	}

	// Only the gateway says what an operation cost.
	res = gw.call(t, "GET", "/v1/events", "", "X-Boxoffice-Query-Cost", `{"requested":0}`)
	if s := res.seen(t); s.QueryCost != "" {
		t.Errorf("a client's own cost header reached the upstream as %q", s.QueryCost)
	}
}

// limitsCost is extensions.cost as a client reads it.
type limitsCost struct {
	Requested, Remaining, Maximum int
	RestoreRate                   float64
	Policy                        string
}

// TestGraphQLPersistedQueries: a hash the gateway has not seen is answered
// PERSISTED_QUERY_NOT_FOUND without reaching the BFF; once the client has sent the query
// with it, the hash alone is held to the limits of the query it stands for.
func TestGraphQLPersistedQueries(t *testing.T) {
	ks := newKeySet(t, "k1")
	be := newBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, shippedPolicy(t), be, map[string]string{"REDIS_URL": rd.URL(), "AUTH_URL": ks.URL})
	ana := []string{"Authorization", "Bearer " + ks.sign(t, "k1", "usr_ana", time.Now(), time.Minute)}

	const hold = `mutation { placeHold(eventId: "e1", quantity: 1) { id } }`
	sum := sha256.Sum256([]byte(hold))
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	body := func(query string) string {
		m := map[string]any{"extensions": ext}
		if query != "" {
			m["query"] = query
		}
		b, _ := json.Marshal(m)
		return string(b)
	}

	hits := be.hits.Load()
	res := gw.call(t, "POST", "/graphql/mobile", body(""), ana...)
	if res.status != http.StatusOK || !strings.Contains(string(res.body), `"code":"PERSISTED_QUERY_NOT_FOUND"`) || be.hits.Load() != hits {
		t.Fatalf("an unknown hash = %d %s, want PERSISTED_QUERY_NOT_FOUND from the gateway itself", res.status, res.body)
	}
	res = gw.call(t, "POST", "/graphql/mobile", body(hold), ana...)
	if res.status != http.StatusOK || !strings.Contains(res.seen(t).Body, "sha256Hash") {
		t.Fatalf("hash and query = %d %s, want them forwarded", res.status, res.body)
	}
	// holds-per-account allows 5: the query sent whole was one, the hash alone four more.
	for i := 2; i <= 6; i++ {
		res = gw.call(t, "POST", "/graphql/mobile", body(""), ana...)
		want := http.StatusOK
		if i == 6 {
			want = http.StatusTooManyRequests
		}
		if res.status != want {
			t.Fatalf("hold %d by hash = %d %s, want %d", i, res.status, res.body, want)
		}
	}
	if !strings.Contains(string(res.body), "holds-per-account") {
		t.Errorf("sixth hold by hash = %s, want refused by holds-per-account", res.body)
	}

	res = gw.call(t, "POST", "/graphql/mobile", body(`{ feed { cards { id } } }`), ana...)
	if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "sha256Hash") {
		t.Errorf("a query under another's hash = %d %s, want 400 naming the hash", res.status, res.body)
	}
}
