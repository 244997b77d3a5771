package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/auth"
)

// TestFrontDoor runs `boxoffice up` and shows that a GraphQL operation passes the gateway's
// limits as the REST request doing the same thing does: one account has one budget of holds,
// of orders and of questions whichever door it uses, every operation also pays its
// calculated cost in points, and a persisted query's hash is held to the limits of the query
// it stands for. Each subtest signs in fans of its own, so no budget is shared between them.
func TestFrontDoor(t *testing.T) {
	// Each limit decision here waits for Redis. By default the gateway gives a round trip 5 ms
	// and then decides locally, and a call it gave up on may still spend in Redis: counted
	// twice, by design (ratelimit.Failsafe). On a busy test machine that would make "exactly
	// five" a matter of luck; the fallback has tests of its own.
	u := startUpWith(t, t.TempDir(), freeOffset(t), map[string]string{"RATELIMIT_TIMEOUT": "1s"})
	t.Cleanup(func() { u.stop(t) })
	ep := u.ep
	gw := &frontDoor{t: t, url: ep.Gateway}
	// Inventory lays out seat maps as the catalog announces its events: the GA holds below
	// need evt-001's.
	testkit.Eventually(t, 20*time.Second, "inventory has evt-001's seat map", func() bool {
		return gw.send(http.MethodGet, "/v1/events/evt-001/seats", "", "").status == http.StatusOK
	})

	for _, sub := range []struct {
		name string
		run  func(*testing.T, *frontDoor, Endpoints)
	}{
		{"holds", frontDoorHolds},
		{"orders", frontDoorOrders},
		{"ask", frontDoorAsk},
		{"cost", frontDoorCost},
		{"persisted queries", frontDoorPersisted},
	} {
		// A front door of the subtest's own: its failures end the subtest, not the test.
		t.Run(sub.name, func(t *testing.T) { sub.run(t, &frontDoor{t: t, url: ep.Gateway}, ep) })
	}
}

// gaHold is a hold of one general-admission ticket of evt-001 (class-1 is the Pista of Arena
// Paulistana, 1,600 standing places), in the three spellings of the three doors.
const (
	gaHoldREST   = `{"class": "class-1", "quantity": 1}`
	gaHoldMobile = `mutation { w: placeHold(eventId: "evt-001", ticketClass: "class-1", quantity: 1) { id status } }`
	gaHoldWeb    = `mutation { w: placeHold(input: {eventId: "evt-001", ticketClass: "class-1", quantity: 1}) { id status } }`
)

// frontDoorHolds: REST, mobile and web holds of one account spend holds-per-account (5 a
// minute, bursts of 5) together; the account has in inventory exactly the holds it was told
// of, and another account is not refused for it.
func frontDoorHolds(t *testing.T, gw *frontDoor, _ Endpoints) {
	ana, bo := gw.login(auth.DemoEmail(1)), gw.login(auth.DemoEmail(2))
	doors := []door{
		{"REST", func() reply { return gw.send(http.MethodPost, "/v1/events/evt-001/holds", ana, gaHoldREST) }},
		{"mobile", func() reply { return gw.graphQL("/graphql/mobile", ana, gaHoldMobile, nil) }},
		{"web", func() reply { return gw.graphQL("/graphql/web", ana, gaHoldWeb, nil) }},
	}
	var told []string
	passed := spend(t, doors, 8, "holds-per-account", func(d door, r reply) {
		id := heldID(t, d.name, r)
		if id != "" {
			told = append(told, id)
		}
	})
	if passed != 5 || len(told) != 5 {
		t.Errorf("holds past the gateway = %d, with an id %d; want 5 of each", passed, len(told))
	}

	var mine struct {
		Holds []struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Class    string `json:"class"`
			Quantity int    `json:"quantity"`
		} `json:"holds"`
		Next string `json:"next_cursor"`
	}
	r := gw.send(http.MethodGet, "/v1/holds?limit=50", ana, "")
	if r.status != http.StatusOK || json.Unmarshal(r.body, &mine) != nil || mine.Next != "" {
		t.Fatalf("GET /v1/holds = %d %s, want one page of the fan's holds", r.status, r.body)
	}
	var stored []string
	for _, h := range mine.Holds {
		stored = append(stored, h.ID)
		if h.Status != "active" || h.Class != "class-1" || h.Quantity != 1 {
			t.Errorf("hold in inventory %+v, want an active hold of one class-1 ticket", h)
		}
	}
	slices.Sort(stored)
	slices.Sort(told)
	if !slices.Equal(stored, told) {
		t.Errorf("holds in inventory = %v, want exactly the %v the doors reported", stored, told)
	}

	r = gw.graphQL("/graphql/mobile", bo, gaHoldMobile, nil)
	if rule := refusedBy(t, "mobile", r); rule != "" || heldID(t, "mobile", r) == "" {
		t.Errorf("another account's hold = %d %s, want a hold: the budget is per account", r.status, r.body)
	}
}

// heldID is the id of the hold a door's answer reports; "" (and t failed) when it reports
// none.
func heldID(t *testing.T, name string, r reply) string {
	t.Helper()
	var hold struct{ ID, Status string }
	if name == "REST" {
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &hold) != nil || hold.Status != "active" {
			t.Errorf("REST hold = %d %s, want 201 and an active hold", r.status, r.body)
		}
		return hold.ID
	}
	var data struct{ W struct{ ID, Status string } }
	if err := r.data(&data); err != nil || data.W.Status != "ACTIVE" {
		t.Errorf("%s placeHold = %d %s (%v), want an active hold", name, r.status, r.body, err)
	}
	return data.W.ID
}

// frontDoorOrders: REST, mobile createOrder and web checkout of one account spend
// orders-per-account (bursts of 5) together. The hold named does not exist, so the orders
// that pass the gateway fail in the order service: what is tested is the gateway's decision.
func frontDoorOrders(t *testing.T, gw *frontDoor, _ Endpoints) {
	cy := gw.login(auth.DemoEmail(3))
	n := 0
	key := func() string { n++; return "frontdoor-" + strconv.Itoa(n) }
	doors := []door{
		{"REST", func() reply {
			return gw.send(http.MethodPost, "/v1/orders", cy, `{"hold_id": "hld-none"}`, "Idempotency-Key", key())
		}},
		{"mobile", func() reply {
			return gw.graphQL("/graphql/mobile", cy, `mutation($key: String!) { createOrder(holdId: "hld-none", idempotencyKey: $key) { id } }`, map[string]any{"key": key()})
		}},
		{"web", func() reply {
			return gw.graphQL("/graphql/web", cy, `mutation($key: String!) { checkout(holdId: "hld-none", idempotencyKey: $key) { id } }`, map[string]any{"key": key()})
		}},
	}
	passed := spend(t, doors, 8, "orders-per-account", func(d door, r reply) {
		t.Logf("%s order past the gateway: %d %s", d.name, r.status, r.body)
	})
	if passed != 5 {
		t.Errorf("orders past the gateway = %d, want 5", passed)
	}
}

// frontDoorAsk: REST questions and bff-web's ask of one account spend assistant-per-account
// (bursts of 5) together.
func frontDoorAsk(t *testing.T, gw *frontDoor, _ Endpoints) {
	dee := gw.login(auth.DemoEmail(4))
	doors := []door{
		{"REST", func() reply {
			return gw.send(http.MethodPost, "/v1/assistant/ask", dee, `{"question": "fado in Lisboa?"}`)
		}},
		{"web", func() reply {
			return gw.graphQL("/graphql/web", dee, `{ ask(question: "fado in Lisboa?") { text tokens } }`, nil)
		}},
	}
	passed := spend(t, doors, 8, "assistant-per-account", func(d door, r reply) {
		var answer struct{ Answer string }
		if d.name == "REST" {
			if r.status != http.StatusOK || json.Unmarshal(r.body, &answer) != nil || answer.Answer == "" {
				t.Errorf("REST ask = %d %s, want an answer", r.status, r.body)
			}
			return
		}
		var data struct{ Ask struct{ Text string } }
		if err := r.data(&data); err != nil || data.Ask.Text == "" {
			t.Errorf("web ask = %d %s (%v), want an answer", r.status, r.body, err)
		}
	})
	if passed != 5 {
		t.Errorf("questions past the gateway = %d, want 5", passed)
	}
}

// The queries of the cost subtest, with their cost under the web route's model in
// gateway/policy.yaml: an object 1 point, a leaf 0, a list as many times as its first (or
// its size in graphql.cost.lists when none is given).
const (
	// event 1 + venue 1 + 5 ticketClasses × (1 + price 1) = 12.
	cheapQuery = `{ event(id: "evt-001") { id title venue { name } ticketClasses { id price { minor } } } }`
	cheapCost  = 12
	// Two seat maps, each event 1 + seatMap 1 + 5 sections × (1 + 10 rows × (1 + 20 seats)) =
	// 1,057, and a search of 100 hits, each 1 + venue 1 + minPrice 1: 1 + 100 × 3 = 301.
	// 2,415 points, most of the 3,000 the budget holds, though bff-web's own complexity limit
	// (a seat map is one call) lets it run.
	dearQuery = `{
		a: event(id: "evt-001") { seatMap { sections { rows { seats { id } } } } }
		b: event(id: "evt-003") { seatMap { sections { rows { seats { id } } } } }
		s: search(first: 100) { hits { id venue { name } minPrice { minor } } }
	}`
	dearCost = 2415
	// 1 + 1,000 × 3 = 3,001: more than the budget ever holds.
	tooDearQuery = `{ search(first: 1000) { hits { id venue { name } minPrice { minor } } } }`
)

// pointsPerSecond and pointsMax are graphql-points-per-account's refill and burst.
const (
	pointsPerSecond = 200
	pointsMax       = 3000
	pointsPolicy    = "graphql-points-per-account"
)

// frontDoorCost: bff-web reports what each operation cost, as the gateway weighed it; an
// operation the points left cannot pay is refused at the gateway with a 429 that is both a
// problem and a GraphQL response, while a cheap one still passes; one that costs more than
// the budget ever holds is a 400.
func frontDoorCost(t *testing.T, gw *frontDoor, ep Endpoints) {
	eve := gw.login(auth.DemoEmail(5))
	const path = "/graphql/web"

	// Each answer's remaining is the budget at its decision, some moment after the request
	// was sent: a later answer's remaining is at most the earlier's plus what refilled since
	// the earlier request was sent, less what the later request cost.
	firstSent := time.Now()
	r := gw.graphQL(path, eve, cheapQuery, nil)
	first := r.cost(t)
	var event struct{ Event struct{ Title string } }
	if err := r.data(&event); err != nil || event.Event.Title == "" {
		t.Errorf("cheap query = %d %s (%v), want evt-001", r.status, r.body, err)
	}
	if first.Requested != cheapCost || first.Maximum != pointsMax || first.RestoreRate != pointsPerSecond || first.Policy != pointsPolicy ||
		first.Remaining < 0 || first.Remaining > pointsMax-cheapCost {
		t.Errorf("cheap query's extensions.cost = %+v, want %d requested of %d, at most %d remaining, %d restored a second, policy %s",
			first, cheapCost, pointsMax, pointsMax-cheapCost, pointsPerSecond, pointsPolicy)
	}

	dearSent := time.Now()
	r = gw.graphQL(path, eve, dearQuery, nil)
	dear := r.cost(t)
	var dearData struct {
		A, B struct{ SeatMap struct{ Sections []struct{} } }
		S    struct{ Hits []struct{ ID string } }
	}
	if err := r.data(&dearData); err != nil || len(dearData.A.SeatMap.Sections) == 0 || len(dearData.B.SeatMap.Sections) == 0 || len(dearData.S.Hits) == 0 {
		t.Errorf("dear query = %d %.300s (%v), want two seat maps and search hits", r.status, r.body, err)
	}
	if most := refilled(first.Remaining, firstSent) - dearCost; dear.Requested != dearCost || dear.Remaining < 0 || dear.Remaining > most {
		t.Errorf("dear query's extensions.cost = %+v, want %d requested and at most %d remaining", dear, dearCost, most)
	}

	// The same again cannot be paid for some seconds: refused before it reaches the BFF.
	web := ep.BFFs["bff-web"][0]
	served := servedRequests(t, web)
	refusedSent := time.Now()
	r = gw.graphQL(path, eve, dearQuery, nil)
	if rule := refusedBy(t, "web", r); rule != pointsPolicy {
		t.Fatalf("dear query again = %d %s, want 429 naming %s", r.status, r.body, pointsPolicy)
	}
	if after := servedRequests(t, web); after != served {
		t.Errorf("bff-web served %d requests during a refused one, want 0", after-served)
	}
	refused := r.cost(t)
	if most := refilled(dear.Remaining, dearSent); refused.Requested != dearCost || refused.Remaining > most || refused.Maximum != pointsMax {
		t.Errorf("refusal's extensions.cost = %+v, want %d requested of %d, at most %d remaining", refused, dearCost, pointsMax, most)
	}
	// The wait is what the missing points take to come back, rounded up; remaining is rounded
	// down, so the wait may be a second shorter than this count.
	if wait := (dearCost - refused.Remaining + pointsPerSecond - 1) / pointsPerSecond; r.retryAfter() != wait && r.retryAfter() != wait-1 {
		t.Errorf("refusal's Retry-After = %d, want %d: %d missing points at %d a second", r.retryAfter(), wait, dearCost-refused.Remaining, pointsPerSecond)
	}

	r = gw.graphQL(path, eve, cheapQuery, nil)
	second := r.cost(t)
	if err := r.data(&event); err != nil {
		t.Errorf("cheap query after the refusal = %d %s (%v), want data", r.status, r.body, err)
	}
	if most := refilled(refused.Remaining, refusedSent) - cheapCost; second.Requested != cheapCost || second.Remaining > most || second.Remaining >= first.Remaining {
		t.Errorf("cheap query after the refusal: extensions.cost = %+v, want %d requested and at most %d remaining, fewer than the first's %d",
			second, cheapCost, most, first.Remaining)
	}

	r = gw.graphQL(path, eve, tooDearQuery, nil)
	if r.status != http.StatusBadRequest || r.header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(string(r.body), "costs 3001 points, more than the 3000") {
		t.Errorf("search of 1000 hits = %d %s, want 400 saying it costs 3001 points, more than the 3000 the budget holds", r.status, r.body)
	}
}

// refilled is the most a points budget can hold now that held remaining at some moment
// after since: remaining plus what refills in the time since, at most full.
func refilled(remaining int, since time.Time) int {
	return min(pointsMax, remaining+int(time.Since(since).Seconds()*pointsPerSecond)+1)
}

// frontDoorPersisted: through either BFF, a hash the gateway has not seen is answered
// PERSISTED_QUERY_NOT_FOUND by the gateway itself; sent with its query it runs and is learnt,
// by the gateway and the BFF; then the hash alone runs in the BFF and costs what its query
// costs.
func frontDoorPersisted(t *testing.T, gw *frontDoor, ep Endpoints) {
	fay := gw.login(auth.DemoEmail(6))
	for _, app := range []struct{ bff, path, query string }{
		// event 1 + 5 ticketClasses × 1 = 6 in both apps' models.
		{"bff-mobile", "/graphql/mobile", `query FrontDoorMobile { event(id: "evt-002") { id title ticketClasses { id } } }`},
		{"bff-web", "/graphql/web", `query FrontDoorWeb { event(id: "evt-002") { id title ticketClasses { id } } }`},
	} {
		t.Run(app.bff, func(t *testing.T) {
			gw := &frontDoor{t: t, url: gw.url}
			sum := sha256.Sum256([]byte(app.query))
			persisted := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
			send := func(query string) reply {
				m := map[string]any{"extensions": persisted}
				if query != "" {
					m["query"] = query
				}
				b, _ := json.Marshal(m)
				return gw.send(http.MethodPost, app.path, fay, string(b))
			}
			bff := ep.BFFs[app.bff][0]

			served := servedRequests(t, bff)
			r := send("")
			var unknown struct {
				Errors []struct {
					Message    string
					Extensions struct{ Code string }
				}
			}
			if r.status != http.StatusOK || json.Unmarshal(r.body, &unknown) != nil || len(unknown.Errors) != 1 ||
				unknown.Errors[0].Message != "PersistedQueryNotFound" || unknown.Errors[0].Extensions.Code != "PERSISTED_QUERY_NOT_FOUND" {
				t.Errorf("an unknown hash = %d %s, want 200 and PERSISTED_QUERY_NOT_FOUND", r.status, r.body)
			}
			if after := servedRequests(t, bff); after != served {
				t.Errorf("%s served %d requests for an unknown hash, want 0: the gateway answers it", app.bff, after-served)
			}

			for _, step := range []struct{ name, query string }{{"hash and query", app.query}, {"hash alone", ""}} {
				served = servedRequests(t, bff)
				r = send(step.query)
				var data struct{ Event struct{ ID, Title string } }
				if err := r.data(&data); err != nil || data.Event.ID != "evt-002" || data.Event.Title == "" {
					t.Errorf("%s = %d %s (%v), want evt-002", step.name, r.status, r.body, err)
				}
				if c := r.cost(t); c.Requested != 6 || c.Policy != pointsPolicy {
					t.Errorf("%s: extensions.cost = %+v, want 6 points of %s", step.name, c, pointsPolicy)
				}
				if after := servedRequests(t, bff); after != served+1 {
					t.Errorf("%s: %s served %d requests, want 1", step.name, app.bff, after-served)
				}
			}
		})
	}
}

// door is one way into the system for the same kind of request: a REST route or a BFF.
type door struct {
	name string
	send func() reply
}

// spend sends n requests through doors in turn and returns how many passed the gateway.
// The first ones pass (each handed to passed) and, once one is refused, every later one must
// be too, by rule, whatever its door: a refusal means the account's budget is spent.
// Budgets refill within seconds, so the n go one after the other, with no wait.
func spend(t *testing.T, doors []door, n int, rule string, passed func(door, reply)) int {
	t.Helper()
	ok := 0
	start := time.Now()
	for i := range n {
		d := doors[i%len(doors)]
		r := d.send()
		got := refusedBy(t, d.name, r)
		switch {
		case got == "" && ok == i:
			ok++
			passed(d, r)
		case got == "":
			t.Errorf("%s request %d passed the gateway after a refusal: %d %s", d.name, i+1, r.status, r.body)
		case got != rule:
			t.Errorf("%s request %d refused by %s, want %s", d.name, i+1, got, rule)
		}
	}
	t.Logf("%d requests in %v, %d past the gateway", n, time.Since(start), ok)
	return ok
}

// reply is an answer from the front door.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send sends body (none when "") to path as the holder of token ("" = none), with header's
// name-value pairs.
func (g *frontDoor) send(method, path, token, body string, header ...string) reply {
	g.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, g.url+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		g.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return reply{status: res.StatusCode, header: res.Header, body: b}
}

// graphQL posts a GraphQL operation to a BFF's path as the holder of token.
func (g *frontDoor) graphQL(path, token, query string, vars map[string]any) reply {
	g.t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return g.send(http.MethodPost, path, token, string(b))
}

// graphQLReply is a GraphQL response, which a 429 from the gateway also is, along with the
// problem fields of every 429.
type graphQLReply struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code       string `json:"code"`
			Policy     string `json:"policy"`
			RetryAfter int    `json:"retryAfterSeconds"`
		} `json:"extensions"`
	} `json:"errors"`
	Extensions struct {
		Cost *queryCost `json:"cost"`
	} `json:"extensions"`
	Status   int      `json:"status"`
	Violated []string `json:"violated-policies"`
}

// queryCost is a response's extensions.cost.
type queryCost struct {
	Requested, Remaining, Maximum int
	RestoreRate                   float64
	Policy                        string
}

// data decodes r's GraphQL data into out; an error when r is no 200 or carries errors.
func (r reply) data(out any) error {
	var a graphQLReply
	if err := json.Unmarshal(r.body, &a); err != nil {
		return err
	}
	if r.status != http.StatusOK || len(a.Errors) > 0 {
		return errNoData
	}
	return json.Unmarshal(a.Data, out)
}

var errNoData = errors.New("an answer other than 200, or with GraphQL errors")

// cost is r's extensions.cost; t fails when there is none.
func (r reply) cost(t *testing.T) queryCost {
	t.Helper()
	var a graphQLReply
	if err := json.Unmarshal(r.body, &a); err != nil || a.Extensions.Cost == nil {
		t.Fatalf("answer %d %.300s has no extensions.cost", r.status, r.body)
	}
	return *a.Extensions.Cost
}

func (r reply) retryAfter() int {
	n, _ := strconv.Atoi(r.header.Get("Retry-After"))
	return n
}

// refusedBy is the limit that refused r, "" when r is no 429. A 429 is checked against the
// gateway's contract: a problem naming the rule among violated-policies with Retry-After and
// RateLimit headers and, from a BFF's door, also a GraphQL response whose one error is
// RATE_LIMITED naming the rule and the same wait.
func refusedBy(t *testing.T, name string, r reply) string {
	t.Helper()
	if r.status != http.StatusTooManyRequests {
		return ""
	}
	var a graphQLReply
	if err := json.Unmarshal(r.body, &a); err != nil || r.header.Get("Content-Type") != "application/problem+json" ||
		a.Status != http.StatusTooManyRequests || len(a.Violated) == 0 {
		t.Errorf("%s 429 = %s %s, want a problem naming the violated policies", name, r.header.Get("Content-Type"), r.body)
		return "?"
	}
	rule := a.Violated[0]
	if after := r.retryAfter(); after < 1 || !strings.Contains(r.header.Get("RateLimit"), `"`+rule+`"`) {
		t.Errorf("%s 429 headers Retry-After %q, RateLimit %q; want a wait and %s's state", name, r.header.Get("Retry-After"), r.header.Get("RateLimit"), rule)
	}
	if name == "REST" {
		return rule
	}
	if len(a.Errors) != 1 || a.Errors[0].Extensions.Code != "RATE_LIMITED" || a.Errors[0].Extensions.Policy != rule ||
		a.Errors[0].Extensions.RetryAfter != r.retryAfter() {
		t.Errorf("%s 429 = %s, want one GraphQL error RATE_LIMITED naming %s and a wait of %ds", name, r.body, rule, r.retryAfter())
	}
	return rule
}
