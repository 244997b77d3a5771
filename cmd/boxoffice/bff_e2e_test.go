package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/bffkit/graphqltest"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/auth"
	"boxoffice.dev/services/catalog"
)

// TestBFFsThroughTheGateway runs `boxoffice up` and uses both BFFs as their apps do: through
// the gateway, which refuses a request without a token before it reaches a BFF, and forwards
// a signed-in fan's to it. It measures the event screen of each for the same event.
func TestBFFsThroughTheGateway(t *testing.T) {
	ep := startUp(t)
	gw := &frontDoor{t: t, url: ep.Gateway}
	// The gateway balances only over instances its probes found ready.
	testkit.Eventually(t, 10*time.Second, "the gateway routes to the BFFs", func() bool {
		status, _, _ := gw.post("/graphql/web", "", "{}")
		return status == http.StatusUnauthorized
	})

	for _, bff := range []struct{ name, path string }{{"bff-mobile", "/graphql/mobile"}, {"bff-web", "/graphql/web"}} {
		before := servedRequests(t, ep.BFFs[bff.name][0])
		status, ctype, body := gw.post(bff.path, "", `{"query":"{ __typename }"}`)
		if status != http.StatusUnauthorized || ctype != "application/problem+json" {
			t.Errorf("POST %s without a token = %d %s %s, want the gateway's 401 problem", bff.path, status, ctype, body)
		}
		if after := servedRequests(t, ep.BFFs[bff.name][0]); after != before {
			t.Errorf("%s served %d requests during a token-less one, want 0: the gateway must refuse it first", bff.name, after-before)
		}
	}

	mobile := gw.login(auth.DemoEmail(1))
	web := gw.login(auth.DemoEmail(2))
	var mobileBytes, webBytes int
	t.Run("mobile", func(t *testing.T) { mobileBytes = useMobile(t, gw, mobile) })
	t.Run("web", func(t *testing.T) { webBytes = useWeb(t, gw, web) })

	t.Logf("event screen of evt-001: mobile %d bytes, web %d bytes (%.1f×)", mobileBytes, webBytes, float64(webBytes)/float64(mobileBytes))
	if mobileBytes == 0 || webBytes < 3*mobileBytes {
		t.Errorf("event screen: mobile %d bytes, web %d; want the mobile one at least 3× smaller", mobileBytes, webBytes)
	}
}

// mobileScreen is the phone app's event screen, as its README measures it.
const mobileScreen = `query($id: ID!) { event(id: $id) {
	id title summary startsAt city venueName lowestPrice { currency minor } imageUrl availability flashSale
	ticketClasses { id name price { currency minor } seated }
} }`

// webPage is the web app's event page, as its README measures it.
const webPage = `query($id: ID!) { event(id: $id) {
	id title description performers startsAt onSaleAt flashSale imageUrl city country tags
	minPrice { currency minor }
	ticketClasses { id name price { currency minor } seated capacity }
	venue { id name city country address capacity sections { name capacity seated } }
	availability { level total available }
	seatMap {
		counts { total available held sold }
		sections { id ticketClass rows { label seats { id number status } } }
		generalAdmission { ticketClass counts { total available } }
	}
} }`

// useMobile goes through the phone app's screens and returns the size of the event screen.
func useMobile(t *testing.T, gw *frontDoor, token string) int {
	const path = "/graphql/mobile"
	var feed struct {
		Feed struct {
			Cards []struct {
				ID, Title, ImageURL string
				VenueName           *string
				Availability        *string
			}
		}
	}
	gw.query(t, path, token, `{ feed(first: 20) { cards { id title imageUrl venueName availability } } }`, nil, &feed)
	if len(feed.Feed.Cards) != 20 || feed.Feed.Cards[0].VenueName == nil || feed.Feed.Cards[0].Availability == nil {
		t.Errorf("feed = %+v, want 20 cards with venue and availability", feed.Feed.Cards)
	}

	var screen struct{ Event struct{ Title string } }
	size := gw.query(t, path, token, mobileScreen, map[string]any{"id": "evt-001"}, &screen)
	if screen.Event.Title == "" {
		t.Errorf("event screen of evt-001 = %+v", screen)
	}

	// The flash sale: join the waiting room, poll until admitted, hold with the pass.
	var joined struct{ JoinQueue struct{ State string } }
	gw.query(t, path, token, `mutation { joinQueue(eventId: "`+catalog.DemoFlashSaleID+`") { state position } }`, nil, &joined)
	var pass string
	testkit.Eventually(t, 10*time.Second, "admitted from the waiting room", func() bool {
		var q struct{ Queue *struct{ State, Pass string } }
		gw.query(t, path, token, `{ queue(eventId: "`+catalog.DemoFlashSaleID+`") { state position pass } }`, nil, &q)
		if q.Queue != nil && q.Queue.State == "ADMITTED" {
			pass = q.Queue.Pass
		}
		return pass != ""
	})
	var held struct{ PlaceHold struct{ ID, Status string } }
	gw.query(t, path, token, `mutation($pass: String) { placeHold(eventId: "`+catalog.DemoFlashSaleID+`", seats: ["B-1-1", "B-1-2"], admissionPass: $pass) { id status quantity } }`,
		map[string]any{"pass": pass}, &held)
	if held.PlaceHold.Status != "ACTIVE" {
		t.Fatalf("placeHold = %+v, want active", held.PlaceHold)
	}
	var ordered struct{ CreateOrder struct{ ID, State string } }
	gw.query(t, path, token, `mutation($hold: ID!) { createOrder(holdId: $hold, idempotencyKey: "mobile-e2e-1") { id state } }`, map[string]any{"hold": held.PlaceHold.ID}, &ordered)
	if ordered.CreateOrder.ID == "" {
		t.Fatalf("createOrder = %+v, want an order", ordered.CreateOrder)
	}
	var mine struct {
		MyHolds struct {
			Holds []struct{ ID, EventTitle string }
		}
		MyOrders struct {
			Orders []struct{ ID, EventTitle string }
		}
	}
	gw.query(t, path, token, `{ myHolds { holds { id eventTitle } } myOrders { orders { id eventTitle } } }`, nil, &mine)
	if len(mine.MyHolds.Holds) != 1 || len(mine.MyOrders.Orders) != 1 || mine.MyOrders.Orders[0].ID != ordered.CreateOrder.ID || !strings.HasPrefix(mine.MyOrders.Orders[0].EventTitle, "Flash Sale") {
		t.Errorf("my holds and orders = %+v, want the hold and order just made", mine)
	}
	return size
}

// useWeb goes through the web app's pages and returns the size of the event page.
func useWeb(t *testing.T, gw *frontDoor, token string) int {
	const path = "/graphql/web"
	var search struct {
		Search struct {
			Total  int
			Hits   []struct{ ID string }
			Facets struct{ City []struct{ Value string } }
		}
	}
	gw.query(t, path, token, `{ search(query: "fado") { total hits { id venue { name } availability { level } } facets { city { value count } month { value count } } } }`, nil, &search)
	if search.Search.Total == 0 || len(search.Search.Facets.City) == 0 {
		t.Errorf("search(fado) = %+v, want hits and city facets", search.Search)
	}

	var page struct {
		Event struct {
			Title   string
			SeatMap struct {
				Sections []struct {
					Rows []struct {
						Seats []struct{ ID, Status string }
					}
				}
			}
		}
	}
	size := gw.query(t, path, token, webPage, map[string]any{"id": "evt-001"}, &page)
	var free []string
	for _, sec := range page.Event.SeatMap.Sections {
		for _, row := range sec.Rows {
			for _, seat := range row.Seats {
				if seat.Status == "AVAILABLE" && len(free) < 3 {
					free = append(free, seat.ID)
				}
			}
		}
	}
	if len(free) != 3 {
		t.Fatalf("evt-001's seat map = %+v, want three available seats", page.Event.SeatMap)
	}

	var held struct{ PlaceHold struct{ ID, Status string } }
	gw.query(t, path, token, `mutation($seats: [ID!]) { placeHold(input: {eventId: "evt-001", seats: $seats}) { id status } }`, map[string]any{"seats": free[:2]}, &held)
	var order struct{ Checkout struct{ ID string } }
	gw.query(t, path, token, `mutation($hold: ID!) { checkout(holdId: $hold, idempotencyKey: "web-e2e-1") { id state amount { minor } } }`, map[string]any{"hold": held.PlaceHold.ID}, &order)
	if held.PlaceHold.Status != "ACTIVE" || order.Checkout.ID == "" {
		t.Fatalf("placeHold = %+v, checkout = %+v; want a hold and its order", held.PlaceHold, order.Checkout)
	}
	var spare struct{ PlaceHold struct{ ID string } }
	gw.query(t, path, token, `mutation($seats: [ID!]) { placeHold(input: {eventId: "evt-001", seats: $seats}) { id } }`, map[string]any{"seats": free[2:]}, &spare)
	var released struct{ ReleaseHold struct{ Status string } }
	gw.query(t, path, token, `mutation($id: ID!) { releaseHold(id: $id) { status } }`, map[string]any{"id": spare.PlaceHold.ID}, &released)
	if released.ReleaseHold.Status != "RELEASED" {
		t.Errorf("releaseHold = %+v, want released", released.ReleaseHold)
	}
	var me struct {
		Me struct {
			Orders        struct{ Orders []struct{ ID string } }
			Holds         struct{ Holds []struct{ ID string } }
			Notifications struct{ Notifications []struct{ Kind string } }
		}
	}
	gw.query(t, path, token, `{ me { orders { orders { id event { title } } } holds { holds { id } } notifications { notifications { kind subject } } } }`, nil, &me)
	if len(me.Me.Orders.Orders) != 1 || me.Me.Orders.Orders[0].ID != order.Checkout.ID || len(me.Me.Holds.Holds) != 2 {
		t.Errorf("me = %+v, want the order and the two holds just made", me.Me)
	}
	var ask struct {
		Ask struct {
			Text   string
			Tokens int
		}
	}
	gw.query(t, path, token, `{ ask(question: "fado in Lisboa?") { text tokens events { title } } }`, nil, &ask)
	if ask.Ask.Text == "" || ask.Ask.Tokens == 0 {
		t.Errorf("ask = %+v, want an answer and its tokens", ask.Ask)
	}
	return size
}

// frontDoor is the system's front door, for a test.
type frontDoor struct {
	t   *testing.T
	url string
}

// post sends body to path with a bearer token ("" = none).
func (g *frontDoor) post(path, token, body string) (status int, contentType string, resp []byte) {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	resp, _ = io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Content-Type"), resp
}

// login signs a demo fan in and returns the access token.
func (g *frontDoor) login(email string) string {
	g.t.Helper()
	body, _ := json.Marshal(map[string]string{"email": email, "password": auth.DemoPassword})
	// Until the gateway's probes have found auth ready it answers 503; ask for the JWKS,
	// not the login, which is limited per account.
	testkit.Eventually(g.t, 10*time.Second, "the gateway routes to auth", func() bool {
		res, err := http.Get(g.url + "/.well-known/jwks.json")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	// Login's limits fail closed: a decision Redis does not answer within the gateway's
	// RATELIMIT_TIMEOUT (a loaded machine, the first seconds after a start) is a 503 with
	// Retry-After, which spends no budget and which a client tries again, as this one does.
	var status int
	var resp []byte
	testkit.Eventually(g.t, 10*time.Second, "login answered other than 503", func() bool {
		status, _, resp = g.post("/v1/auth/login", "", string(body))
		return status != http.StatusServiceUnavailable
	})
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if status != http.StatusOK || json.Unmarshal(resp, &tok) != nil || tok.AccessToken == "" {
		g.t.Fatalf("login %s = %d %s", email, status, resp)
	}
	// A gateway that started before auth knows no signing key yet, and looks again at most
	// every 10s (MinRefetch); until then it refuses the token. Refusals come before the
	// limits, so asking costs no budget.
	testkit.Eventually(g.t, 15*time.Second, "the gateway knows auth's signing key", func() bool {
		status, _, _ := g.post("/graphql/web", tok.AccessToken, `{"query":"{ __typename }"}`)
		return status != http.StatusUnauthorized
	})
	return tok.AccessToken
}

// query runs a GraphQL operation through the gateway, fails t on any error in the answer,
// decodes its data into out and returns the answer's size in bytes.
func (g *frontDoor) query(t *testing.T, path, token, query string, vars map[string]any, out any) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	status, _, resp := g.post(path, token, string(body))
	var answer struct {
		Data   json.RawMessage     `json:"data"`
		Errors []graphqltest.Error `json:"errors"`
	}
	if status != http.StatusOK || json.Unmarshal(resp, &answer) != nil || len(answer.Errors) > 0 {
		t.Fatalf("POST %s %s = %d %s", path, strings.Join(strings.Fields(query), " "), status, resp)
	}
	if err := json.Unmarshal(answer.Data, out); err != nil {
		t.Fatalf("POST %s: data %s: %v", path, answer.Data, err)
	}
	return len(resp)
}

// servedRequests is how many requests a process's own routes have answered, from its
// http.server metrics.
func servedRequests(t *testing.T, base string) int {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", base, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "http_server_request_duration_seconds_count") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			n += int(v)
		}
	}
	return n
}

func TestWiringPointsTheBFFsAtEveryService(t *testing.T) {
	w := wiring(100)
	for name, want := range map[string]string{
		"CATALOG_GRPC_ADDR": "127.0.0.1:9202", "INVENTORY_GRPC_ADDR": "127.0.0.1:9204", "WAITROOM_GRPC_ADDR": "127.0.0.1:9205",
		"ORDER_GRPC_ADDR": "127.0.0.1:9206", "SEARCH_GRPC_ADDR": "127.0.0.1:9203", "NOTIFICATION_GRPC_ADDR": "127.0.0.1:9208",
		"ASSISTANT_GRPC_ADDR": "127.0.0.1:9209", "GRAPHIQL": "true",
	} {
		if got := w[name]; got != want {
			t.Errorf("wiring(100)[%s] = %q, want %q", name, got, want)
		}
	}
}
