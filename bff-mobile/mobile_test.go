package bffmobile

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"
	"google.golang.org/grpc"

	"boxoffice.dev/bff-mobile/graph"
	"boxoffice.dev/bffkit/graphqlserver"
	"boxoffice.dev/bffkit/graphqltest"
	"boxoffice.dev/bffkit/loaders"
	"boxoffice.dev/bffkit/servicetest"
	"boxoffice.dev/bffkit/upstream"
	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/identity"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
)

// fixture is bff-mobile's handler over fake services, with the production limits and call
// timeout, and a gqlgen client for a signed-in fan and one for an anonymous caller.
type fixture struct {
	svc  *servicetest.Services
	fan  *client.Client
	anon *client.Client
}

const fan = "acc-fan-1"

// batchWait is the loaders' wait in tests: long enough that a busy machine still gathers a
// page's keys in one batch, so the call counts below are exact.
const batchWait = 50 * time.Millisecond

func newFixture(t *testing.T, events int) *fixture {
	t.Helper()
	return newFixtureWith(t, events, map[string]string{})
}

// newFixtureWith is newFixture with env changing the configuration's defaults.
func newFixtureWith(t *testing.T, events int, env map[string]string) *fixture {
	t.Helper()
	svc := servicetest.Start(t, events)
	cfg := LoadConfig(config.New(func(k string) string { return env[k] }))
	dial := func(s *servicetest.Server) grpc.ClientConnInterface {
		return upstream.WithDeadlines(s.Dial(t, 0), cfg.Deadlines())
	}
	res := &graph.Resolver{
		Catalog:   catalogv1.NewCatalogClient(dial(svc.Catalog)),
		Inventory: inventoryv1.NewInventoryClient(dial(svc.Inventory)),
		Waitroom:  waitroomv1.NewWaitroomClient(dial(svc.Waitroom)),
		Orders:    orderv1.NewOrderClient(dial(svc.Order)),
	}
	h := Handler(res, graphqlserver.Options{MaxDepth: cfg.MaxDepth, MaxComplexity: cfg.MaxComplexity}, loaders.Options{Wait: batchWait})
	return &fixture{
		svc:  svc,
		fan:  client.New(h, client.Path(Path), client.AddHeader(identity.HeaderUser, fan)),
		anon: client.New(h, client.Path(Path)),
	}
}

// feedQuery is the home screen's query.
const feedQuery = `query($first: Int!) { feed(first: $first) {
	cards { id title startsAt city venueName lowestPrice { currency minor } imageUrl availability flashSale }
	nextCursor
} }`

type card struct {
	ID           string
	Title        string
	VenueName    *string
	LowestPrice  *struct{ Minor int }
	ImageURL     string `json:"imageUrl"`
	Availability *string
}

func TestFeedOf50IsThreeCalls(t *testing.T) {
	f := newFixture(t, 60)
	var data struct {
		Feed struct {
			Cards      []card
			NextCursor *string
		}
	}
	got := f.svc.CallsDuring(func() {
		if errs := graphqltest.Post(t, f.fan, feedQuery, &data, client.Var("first", 50)); len(errs) > 0 {
			t.Fatalf("feed errors: %+v", errs)
		}
	})
	if len(data.Feed.Cards) != 50 || data.Feed.NextCursor == nil {
		t.Fatalf("feed = %d cards, next %v; want 50 and a next page", len(data.Feed.Cards), data.Feed.NextCursor)
	}
	for _, c := range data.Feed.Cards {
		if c.VenueName == nil || c.Availability == nil || c.LowestPrice == nil || !strings.HasSuffix(c.ImageURL, "?w=320") {
			t.Errorf("card %s = %+v, want venue, availability, price and a 320 px image", c.ID, c)
		}
	}
	if c := data.Feed.Cards[1]; c.LowestPrice.Minor != 8100 {
		t.Errorf("evt-002's lowest price = %d, want 8100 (pista, under cadeira)", c.LowestPrice.Minor)
	}
	want := map[string]int{"ListEvents": 1, "BatchGetVenues": 1, "BatchGetAvailability": 1}
	if !mapsEqual(got, want) {
		t.Errorf("a feed of 50 cards made calls %v, want %v: one per service, not one per card", got, want)
	}

	// The next page starts where this one ended.
	var next struct{ Feed struct{ Cards []card } }
	graphqltest.Post(t, f.fan, `query($after: String) { feed(first: 50, after: $after) { cards { id } } }`, &next, client.Var("after", *data.Feed.NextCursor))
	if len(next.Feed.Cards) != 10 || next.Feed.Cards[0].ID != "evt-051" {
		t.Errorf("second page = %+v, want evt-051…evt-060", next.Feed.Cards)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// screenQuery is the event screen's query.
const screenQuery = `query($id: ID!) { event(id: $id) {
	id title summary startsAt city venueName lowestPrice { currency minor } imageUrl availability flashSale
	ticketClasses { id name price { currency minor } seated }
} }`

func TestEventScreen(t *testing.T) {
	f := newFixture(t, 3)
	var data struct {
		Event *struct {
			Title         string
			Summary       string
			VenueName     *string
			ImageURL      string `json:"imageUrl"`
			Availability  *string
			FlashSale     bool
			TicketClasses []struct{ ID string }
		}
	}
	got := f.svc.CallsDuring(func() {
		if errs := graphqltest.Post(t, f.fan, screenQuery, &data, client.Var("id", "evt-002")); len(errs) > 0 {
			t.Fatalf("event screen errors: %+v", errs)
		}
	})
	e := data.Event
	if e == nil || e.Title != "Show number 2" || e.VenueName == nil || e.Availability == nil || !e.FlashSale || len(e.TicketClasses) != 2 {
		t.Fatalf("event = %+v, want evt-002, a flash sale, with venue, availability and two classes", e)
	}
	if n := len([]rune(e.Summary)); n > 140 || !strings.HasSuffix(e.Summary, "…") || !strings.HasSuffix(e.ImageURL, "?w=640") {
		t.Errorf("summary %q (%d characters), image %q; want at most 140 characters, cut, and a 640 px image", e.Summary, n, e.ImageURL)
	}
	if len(got) != 3 {
		t.Errorf("the event screen made calls %v, want one each of events, venues, availability", got)
	}

	data.Event = nil
	if errs := graphqltest.Post(t, f.fan, screenQuery, &data, client.Var("id", "evt-404")); len(errs) > 0 || data.Event != nil {
		t.Errorf("event(evt-404) = %+v, %+v; want null and no error", data.Event, errs)
	}
}

func TestASlowOrDownServiceFailsItsFieldsOnly(t *testing.T) {
	f := newFixture(t, 5)
	f.svc.Inventory.Stop()
	var data struct{ Feed *struct{ Cards []card } }
	errs := graphqltest.Post(t, f.fan, feedQuery, &data, client.Var("first", 5))
	if data.Feed == nil || len(data.Feed.Cards) != 5 {
		t.Fatalf("feed with inventory down = %+v, want its 5 cards", data.Feed)
	}
	for _, c := range data.Feed.Cards {
		if c.Title == "" || c.VenueName == nil || c.Availability != nil {
			t.Errorf("card %+v, want title and venue, availability null", c)
		}
	}
	if len(errs) != 5 {
		t.Errorf("errors = %+v, want one per card's availability", errs)
	}
	for i, e := range errs {
		if !strings.HasPrefix(e.Where(), "feed.cards.") || !strings.HasSuffix(e.Where(), ".availability") || e.Code() != "unavailable" {
			t.Errorf("error %d = %q at %s (code %s), want unavailable at a card's availability", i, e.Message, e.Where(), e.Code())
		}
	}
}

func TestWaitingRoomHoldAndOrder(t *testing.T) {
	f := newFixture(t, 3)
	type queue struct {
		State    string
		Position int
		Pass     *string
	}
	var joined struct{ JoinQueue queue }
	if errs := graphqltest.Post(t, f.fan, `mutation { joinQueue(eventId: "evt-002") { state position pass } }`, &joined); len(errs) > 0 {
		t.Fatalf("joinQueue errors: %+v", errs)
	}
	if joined.JoinQueue.State != "WAITING" || joined.JoinQueue.Position != servicetest.FirstPosition {
		t.Errorf("joinQueue = %+v, want waiting at %d", joined.JoinQueue, servicetest.FirstPosition)
	}
	var positions []int
	var pass string
	for range servicetest.FirstPosition + 1 {
		var polled struct{ Queue *queue }
		graphqltest.Post(t, f.fan, `{ queue(eventId: "evt-002") { state position pass } }`, &polled)
		if polled.Queue == nil {
			t.Fatal("queue(evt-002) = null after joining")
		}
		positions = append(positions, polled.Queue.Position)
		if polled.Queue.State == "ADMITTED" && polled.Queue.Pass != nil {
			pass = *polled.Queue.Pass
			break
		}
	}
	if !slices.Equal(positions, []int{2, 1, 0}) || pass == "" {
		t.Fatalf("polled positions %v, pass %q; want 2, 1, then admitted with a pass", positions, pass)
	}
	var notJoined struct{ Queue *queue }
	if errs := graphqltest.Post(t, f.fan, `{ queue(eventId: "evt-001") { state } }`, &notJoined); len(errs) > 0 || notJoined.Queue != nil {
		t.Errorf("queue of an event not joined = %+v, %+v; want null", notJoined.Queue, errs)
	}

	place := `mutation($pass: String) { placeHold(eventId: "evt-002", ticketClass: "pista", quantity: 2, admissionPass: $pass) { id status quantity ticketClass eventTitle } }`
	if errs := graphqltest.Post(t, f.fan, place, nil, client.Var("pass", "forged")); len(errs) != 1 || errs[0].Code() != "forbidden" {
		t.Errorf("placeHold with a forged pass = %+v, want forbidden", errs)
	}
	var held struct {
		PlaceHold struct {
			ID, Status string
			Quantity   int
			EventTitle *string
		}
	}
	if errs := graphqltest.Post(t, f.fan, place, &held, client.Var("pass", pass)); len(errs) > 0 {
		t.Fatalf("placeHold errors: %+v", errs)
	}
	if h := held.PlaceHold; h.Status != "ACTIVE" || h.Quantity != 2 || h.EventTitle == nil || *h.EventTitle != "Show number 2" {
		t.Errorf("placeHold = %+v, want 2 active pista tickets of Show number 2", h)
	}

	order := `mutation($hold: ID!) { createOrder(holdId: $hold, idempotencyKey: "phone-retry-1") { id state amount { minor } eventTitle } }`
	var first, retry struct {
		CreateOrder struct {
			ID, State string
			Amount    struct{ Minor int }
		}
	}
	graphqltest.Post(t, f.fan, order, &first, client.Var("hold", held.PlaceHold.ID))
	graphqltest.Post(t, f.fan, order, &retry, client.Var("hold", held.PlaceHold.ID))
	if first.CreateOrder.State != "PENDING" || first.CreateOrder.Amount.Minor != 2*8100 || retry.CreateOrder.ID != first.CreateOrder.ID {
		t.Errorf("createOrder = %+v, retried = %+v; want one pending order of 2 × 81.00", first.CreateOrder, retry.CreateOrder)
	}

	var mine struct {
		MyHolds struct {
			Holds []struct {
				ID         string
				EventTitle *string
			}
		}
		MyOrders struct {
			Orders []struct {
				ID         string
				EventTitle *string
			}
		}
	}
	got := f.svc.CallsDuring(func() {
		graphqltest.Post(t, f.fan, `{ myHolds { holds { id eventTitle } } myOrders { orders { id eventTitle } } }`, &mine)
	})
	if len(mine.MyHolds.Holds) != 1 || len(mine.MyOrders.Orders) != 1 || *mine.MyOrders.Orders[0].EventTitle != "Show number 2" {
		t.Errorf("my holds and orders = %+v, want the one hold and the one order with their event's title", mine)
	}
	if got["BatchGetEvents"] != 1 {
		t.Errorf("my holds and orders made calls %v, want both titles in one BatchGetEvents", got)
	}
	if u := f.svc.Waitroom.LastUser("/boxoffice.waitroom.v1.Waitroom/Status"); u != fan {
		t.Errorf("waitroom saw user %q, want %q from the gateway's header", u, fan)
	}
}

func TestAnAnonymousCallerGetsTheFeedOnly(t *testing.T) {
	f := newFixture(t, 3)
	for _, tc := range []struct{ name, query string }{
		{"myHolds", `{ myHolds { holds { id } } }`},
		{"myOrders", `{ myOrders { orders { id } } }`},
		{"queue", `{ queue(eventId: "evt-002") { state } }`},
		{"joinQueue", `mutation { joinQueue(eventId: "evt-002") { state } }`},
		{"placeHold", `mutation { placeHold(eventId: "evt-001", seats: ["B-1-1"]) { id } }`},
		{"createOrder", `mutation { createOrder(holdId: "hold-1", idempotencyKey: "k") { id } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs []graphqltest.Error
			got := f.svc.CallsDuring(func() { errs = graphqltest.Post(t, f.anon, tc.query, nil) })
			if len(errs) != 1 || errs[0].Code() != "unauthorized" {
				t.Errorf("%s without a user = %+v, want one unauthorized error", tc.query, errs)
			}
			if len(got) > 0 {
				t.Errorf("%s without a user made calls %v, want none", tc.query, got)
			}
		})
	}
	var data struct{ Feed struct{ Cards []card } }
	if errs := graphqltest.Post(t, f.anon, feedQuery, &data, client.Var("first", 3)); len(errs) > 0 || len(data.Feed.Cards) != 3 {
		t.Errorf("feed without a user = %d cards, %+v; want the public feed", len(data.Feed.Cards), errs)
	}
}

func TestExpensiveQueriesAreRefusedBeforeAnyCall(t *testing.T) {
	f := newFixture(t, 3)
	full := `cards { id title startsAt city venueName lowestPrice { currency minor } imageUrl availability flashSale }`
	for _, tc := range []struct {
		name, query, wantCode string
	}{
		{"two full feeds at once", `{ a: feed(first: 50) { ` + full + ` } b: feed(first: 50) { ` + full + ` } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"a feed page too large", `{ feed(first: 51) { cards { id } } }`, "invalid"},
		{"an image too wide", `{ feed(first: 1) { cards { imageUrl(width: 9000) } } }`, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs []graphqltest.Error
			got := f.svc.CallsDuring(func() { errs = graphqltest.Post(t, f.fan, tc.query, nil) })
			if len(errs) != 1 || errs[0].Code() != tc.wantCode {
				t.Errorf("errors = %+v, want one %s", errs, tc.wantCode)
			}
			if tc.wantCode != "invalid" && len(got) > 0 {
				t.Errorf("a refused query made calls %v, want none", got)
			}
		})
	}
}

// TestTheDepthLimitRefusesBeforeAnyCall lowers the limit: the schema has no cycles, so no
// query reaches the default of 6 today, and the limit is there for the day one is added.
func TestTheDepthLimitRefusesBeforeAnyCall(t *testing.T) {
	f := newFixtureWith(t, 3, map[string]string{"GRAPHQL_MAX_DEPTH": "3"})
	var errs []graphqltest.Error
	got := f.svc.CallsDuring(func() { errs = graphqltest.Post(t, f.fan, `{ myOrders { orders { amount { minor } } } }`, nil) })
	if len(errs) != 1 || errs[0].Code() != graphqlserver.CodeDepthLimit || len(got) > 0 {
		t.Errorf("a query 4 deep under a limit of 3 = %+v with calls %v, want one %s and no call", errs, got, graphqlserver.CodeDepthLimit)
	}
	if errs := graphqltest.Post(t, f.fan, `{ myOrders { orders { id } } }`, nil); len(errs) > 0 {
		t.Errorf("a query 3 deep = %+v, want it answered", errs)
	}
}
