package bffweb

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"
	"google.golang.org/grpc"

	"boxoffice.dev/bff-web/graph"
	"boxoffice.dev/bffkit/graphqlserver"
	"boxoffice.dev/bffkit/graphqltest"
	"boxoffice.dev/bffkit/loaders"
	"boxoffice.dev/bffkit/servicetest"
	"boxoffice.dev/bffkit/upstream"
	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/identity"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
)

// fixture is bff-web's handler over fake services, with the production limits, and a
// gqlgen client for a signed-in fan and one for an anonymous caller.
type fixture struct {
	h    http.Handler
	svc  *servicetest.Services
	fan  *client.Client
	anon *client.Client
}

const fan = "acc-fan-1"

// batchWait is the loaders' wait in tests: long enough that a busy machine still gathers a
// page's keys in one batch, so the call counts below are exact.
const batchWait = 50 * time.Millisecond

func newFixture(t *testing.T, events int, graphiQL bool) *fixture {
	t.Helper()
	svc := servicetest.Start(t, events)
	cfg := LoadConfig(config.New(func(string) string { return "" }))
	dial := func(s *servicetest.Server) grpc.ClientConnInterface {
		return upstream.WithDeadlines(s.Dial(t, 0), cfg.Deadlines())
	}
	res := &graph.Resolver{
		Catalog:       catalogv1.NewCatalogClient(dial(svc.Catalog)),
		Inventory:     inventoryv1.NewInventoryClient(dial(svc.Inventory)),
		Orders:        orderv1.NewOrderClient(dial(svc.Order)),
		Search:        searchv1.NewSearchClient(dial(svc.Search)),
		Notifications: notificationv1.NewNotificationClient(dial(svc.Notification)),
		Assistant:     assistantv1.NewAssistantClient(dial(svc.Assistant)),
	}
	h := Handler(res, graphqlserver.Options{MaxDepth: cfg.MaxDepth, MaxComplexity: cfg.MaxComplexity, GraphiQL: graphiQL},
		loaders.Options{Wait: batchWait})
	return &fixture{
		h:    h,
		svc:  svc,
		fan:  client.New(h, client.Path(Path), client.AddHeader(identity.HeaderUser, fan)),
		anon: client.New(h, client.Path(Path)),
	}
}

func TestSearchPageIsAConstantNumberOfCalls(t *testing.T) {
	f := newFixture(t, 60, false)
	var data struct {
		Search struct {
			Total int
			Hits  []struct {
				ID           string
				Title        string
				MinPrice     struct{ Minor int }
				Venue        struct{ Name string }
				Availability struct{ Level string }
			}
			Facets struct {
				City []struct {
					Value string
					Count int
				}
			}
		}
	}
	query := `{ search(query: "show", first: 50) { total hits { id title minPrice { minor } venue { name } availability { level } } facets { city { value count } } } }`
	got := f.svc.CallsDuring(func() {
		if errs := graphqltest.Post(t, f.fan, query, &data); len(errs) > 0 {
			t.Fatalf("search errors: %+v", errs)
		}
	})
	if data.Search.Total != 60 || len(data.Search.Hits) != 50 {
		t.Fatalf("search = %d total, %d hits; want 60 and 50", data.Search.Total, len(data.Search.Hits))
	}
	for _, h := range data.Search.Hits {
		if h.Venue.Name == "" || h.Availability.Level == "" || h.MinPrice.Minor == 0 {
			t.Errorf("hit %s = %+v, want its venue, availability and price", h.ID, h)
		}
	}
	if len(data.Search.Facets.City) != 2 {
		t.Errorf("city facets = %+v, want São Paulo and Lisboa", data.Search.Facets.City)
	}
	want := map[string]int{"Search": 1, "BatchGetVenues": 1, "BatchGetAvailability": 1}
	if !maps.Equal(got, want) {
		t.Errorf("a page of 50 hits made calls %v, want %v: one per service, not one per hit", got, want)
	}
}

// eventPage is the web app's event page query, whole.
const eventPage = `query($id: ID!) { event(id: $id) {
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

type seatMapData struct {
	Counts   struct{ Total, Available, Held, Sold int }
	Sections []struct {
		ID   string
		Rows []struct {
			Label string
			Seats []struct {
				ID     string
				Status string
			}
		}
	}
}

func TestEventPage(t *testing.T) {
	f := newFixture(t, 3, false)
	var data struct {
		Event *struct {
			Title   string
			Venue   struct{ Address string }
			SeatMap seatMapData
		}
	}
	if errs := graphqltest.Post(t, f.fan, eventPage, &data, client.Var("id", "evt-001")); len(errs) > 0 {
		t.Fatalf("event page errors: %+v", errs)
	}
	if data.Event == nil || data.Event.Title != "Show number 1" || data.Event.Venue.Address == "" {
		t.Fatalf("event = %+v, want evt-001 with its venue's address", data.Event)
	}
	status := map[string]string{}
	for _, sec := range data.Event.SeatMap.Sections {
		for _, row := range sec.Rows {
			for _, seat := range row.Seats {
				status[seat.ID] = seat.Status
			}
		}
	}
	for id, want := range map[string]string{"A-1-1": "SOLD", "A-1-3": "HELD", "B-4-12": "AVAILABLE"} {
		if status[id] != want {
			t.Errorf("seat %s = %q, want %s", id, status[id], want)
		}
	}
	if len(status) != 96 || data.Event.SeatMap.Counts.Sold != 2 {
		t.Errorf("seat map has %d seats and counts %+v, want all 96 seats, 2 sold", len(status), data.Event.SeatMap.Counts)
	}

	data.Event = nil
	if errs := graphqltest.Post(t, f.fan, eventPage, &data, client.Var("id", "evt-404")); len(errs) > 0 || data.Event != nil {
		t.Errorf("event(evt-404) = %+v, %+v; want null and no error", data.Event, errs)
	}
}

func TestAServiceDownFailsItsFieldsOnly(t *testing.T) {
	f := newFixture(t, 3, false)
	f.svc.Inventory.Stop()
	var data struct {
		Event *struct {
			Title        string
			Venue        *struct{ Name string }
			Availability *struct{ Level string }
			SeatMap      *seatMapData
		}
		Search *struct {
			Hits []struct {
				Title        string
				Availability *struct{ Level string }
			}
		}
	}
	query := `query($id: ID!) {
		event(id: $id) { title venue { name } availability { level } seatMap { counts { total } } }
		search(first: 3) { hits { title availability { level } } }
	}`
	errs := graphqltest.Post(t, f.fan, query, &data, client.Var("id", "evt-001"))

	if data.Event == nil || data.Event.Title == "" || data.Event.Venue == nil || data.Event.Availability != nil || data.Event.SeatMap != nil {
		t.Errorf("event = %+v, want title and venue, no availability or seat map", data.Event)
	}
	if data.Search == nil || len(data.Search.Hits) != 3 {
		t.Fatalf("search = %+v, want its 3 hits", data.Search)
	}
	wantPaths := map[string]bool{"event.availability": true, "event.seatMap": true, "search.hits.0.availability": true, "search.hits.1.availability": true, "search.hits.2.availability": true}
	for _, e := range errs {
		if !wantPaths[e.Where()] || e.Code() != "unavailable" || e.Message != "inventory is unavailable" {
			t.Errorf("error %q at %s (code %s), want only \"inventory is unavailable\" at an inventory field", e.Message, e.Where(), e.Code())
		}
		delete(wantPaths, e.Where())
	}
	if len(wantPaths) > 0 {
		t.Errorf("no error at %v", wantPaths)
	}
}

func TestHoldCheckoutAndMyPages(t *testing.T) {
	f := newFixture(t, 3, false)
	type hold struct {
		ID       string
		Status   string
		Quantity int
		Seats    []string
	}
	var placed struct{ PlaceHold hold }
	place := `mutation($seats: [ID!]) { placeHold(input: {eventId: "evt-001", seats: $seats}) { id status quantity seats } }`
	if errs := graphqltest.Post(t, f.fan, place, &placed, client.Var("seats", []string{"B-2-1", "B-2-2"})); len(errs) > 0 {
		t.Fatalf("placeHold errors: %+v", errs)
	}
	if h := placed.PlaceHold; h.Status != "ACTIVE" || h.Quantity != 2 {
		t.Errorf("placeHold = %+v, want an active hold of 2", h)
	}
	if got := f.svc.Inventory.LastUser("/boxoffice.inventory.v1.Inventory/PlaceHold"); got != fan {
		t.Errorf("inventory saw user %q, want %q from the gateway's header", got, fan)
	}
	errs := graphqltest.Post(t, f.fan, place, nil, client.Var("seats", []string{"B-2-2"}))
	if len(errs) != 1 || errs[0].Code() != "conflict" {
		t.Errorf("placeHold of a held seat = %+v, want one conflict", errs)
	}

	checkout := `mutation($hold: ID!) { checkout(holdId: $hold, idempotencyKey: "k-1") { id state amount { currency minor } lines { ticketClass quantity } } }`
	var first, again struct {
		Checkout struct {
			ID     string
			State  string
			Amount struct {
				Currency string
				Minor    int
			}
		}
	}
	if errs := graphqltest.Post(t, f.fan, checkout, &first, client.Var("hold", placed.PlaceHold.ID)); len(errs) > 0 {
		t.Fatalf("checkout errors: %+v", errs)
	}
	graphqltest.Post(t, f.fan, checkout, &again, client.Var("hold", placed.PlaceHold.ID))
	if first.Checkout.State != "PENDING" || first.Checkout.Amount.Minor != 30000 || again.Checkout.ID != first.Checkout.ID {
		t.Errorf("checkout = %+v then %+v, want one pending order of 300.00, replayed by its key", first.Checkout, again.Checkout)
	}

	var me struct {
		Me struct {
			Account string
			Orders  struct {
				Orders []struct {
					ID    string
					Event struct{ Title string }
				}
			}
			Holds struct {
				Holds []struct {
					ID    string
					Event struct{ Title string }
				}
			}
			Notifications struct {
				Notifications []struct{ Kind, Subject string }
			}
		}
	}
	query := `{ me { account
		orders(first: 10) { orders { id event { title } } nextCursor }
		holds { holds { id event { title } } }
		notifications { notifications { kind subject } } } }`
	got := f.svc.CallsDuring(func() {
		if errs := graphqltest.Post(t, f.fan, query, &me); len(errs) > 0 {
			t.Fatalf("me errors: %+v", errs)
		}
	})
	m := me.Me
	if m.Account != fan || len(m.Orders.Orders) != 1 || m.Orders.Orders[0].Event.Title != "Show number 1" ||
		len(m.Holds.Holds) != 1 || m.Holds.Holds[0].Event.Title != "Show number 1" || len(m.Notifications.Notifications) != 2 {
		t.Errorf("me = %+v, want the order and the hold with their event, and two notifications", m)
	}
	if got["BatchGetEvents"] != 1 {
		t.Errorf("me made calls %v, want the order's and the hold's events in one BatchGetEvents", got)
	}

	var released struct{ ReleaseHold hold }
	graphqltest.Post(t, f.fan, `mutation($id: ID!) { releaseHold(id: $id) { id status } }`, &released, client.Var("id", placed.PlaceHold.ID))
	if released.ReleaseHold.Status != "RELEASED" {
		t.Errorf("releaseHold = %+v, want released", released.ReleaseHold)
	}
}

func TestAsk(t *testing.T) {
	f := newFixture(t, 5, false)
	var data struct {
		Ask struct {
			Text   string
			Tokens int
			Events []struct{ ID, VenueName string }
		}
	}
	if errs := graphqltest.Post(t, f.fan, `{ ask(question: "what's on this weekend?") { text tokens events { id venueName } } }`, &data); len(errs) > 0 {
		t.Fatalf("ask errors: %+v", errs)
	}
	if a := data.Ask; a.Text == "" || a.Tokens == 0 || len(a.Events) != 3 || a.Events[0].VenueName == "" {
		t.Errorf("ask = %+v, want an answer, its tokens and 3 events with venues", a)
	}

	// The gateway charges the assistant's token quota from the answer's header: a question
	// with other fields costs the question, a request without one costs nothing.
	for _, tc := range []struct {
		query string
		want  string
	}{
		{`{ ask(question: "fado in Lisboa?") { tokens } event(id: "evt-001") { title } }`, strconv.Itoa(len("fado in Lisboa?") + len("I found 3 events for you."))},
		{`{ event(id: "evt-001") { title } }`, ""},
	} {
		body, _ := json.Marshal(map[string]string{"query": tc.query})
		req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(identity.HeaderUser, fan)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if got := rec.Header().Get(graph.TokensHeader); got != tc.want || rec.Code != http.StatusOK {
			t.Errorf("POST %s: %d, %s = %q, want %q", tc.query, rec.Code, graph.TokensHeader, got, tc.want)
		}
	}
}

func TestAnAnonymousCallerGetsPublicDataOnly(t *testing.T) {
	f := newFixture(t, 3, false)
	for _, tc := range []struct{ name, query string }{
		{"me", `{ me { account } }`},
		{"ask", `{ ask(question: "jazz?") { text } }`},
		{"placeHold", `mutation { placeHold(input: {eventId: "evt-001", seats: ["B-1-1"]}) { id } }`},
		{"checkout", `mutation { checkout(holdId: "hold-1", idempotencyKey: "k") { id } }`},
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
	var data struct{ Event struct{ Title string } }
	if errs := graphqltest.Post(t, f.anon, `{ event(id: "evt-001") { title } }`, &data); len(errs) > 0 || data.Event.Title == "" {
		t.Errorf("event without a user = %+v, %+v; want the public event", data, errs)
	}
}

func TestExpensiveQueriesAreRefusedBeforeAnyCall(t *testing.T) {
	f := newFixture(t, 3, false)
	for _, tc := range []struct {
		name, query, wantCode string
	}{
		{"every order's seat map", `{ me { orders(first: 50) { orders { event { seatMap { counts { total } } } } } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"a search of 100 full hits", `{ search(first: 100) { hits { id title performers startsAt city country imageUrl flashSale tags score minPrice { currency minor } venue { id name city country address capacity sections { name capacity seated } } availability { level total available } } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"nine levels deep", `{ me { orders(first: 1) { orders { event { seatMap { sections { rows { seats { id } } } } } } } } }`, graphqlserver.CodeDepthLimit},
		{"a page larger than any", `{ search(first: 500) { total } }`, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs []graphqltest.Error
			got := f.svc.CallsDuring(func() { errs = graphqltest.Post(t, f.fan, tc.query, nil) })
			if len(errs) != 1 || errs[0].Code() != tc.wantCode {
				t.Errorf("errors = %+v, want one %s", errs, tc.wantCode)
			}
			if len(got) > 0 {
				t.Errorf("a refused query made calls %v, want none", got)
			}
		})
	}
	errs := graphqltest.Post(t, f.fan, `{ search(first: 0) { total } }`, nil)
	if len(errs) != 1 || errs[0].Code() != "invalid" || errs[0].Extensions["field"] != "first" {
		t.Errorf("search(first: 0) = %+v, want invalid naming first", errs)
	}
}

func TestIntrospectionOnlyWithGraphiQL(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		f := newFixture(t, 1, enabled)
		var data struct {
			Schema *struct{ QueryType struct{ Name string } } `json:"__schema"`
		}
		errs := graphqltest.Post(t, f.fan, `{ __schema { queryType { name } } }`, &data)
		if got := len(errs) == 0 && data.Schema != nil && data.Schema.QueryType.Name == "Query"; got != enabled {
			t.Errorf("GraphiQL %v: introspection = %+v, %+v; want it answered %v", enabled, data.Schema, errs, enabled)
		}
		// Refused, it is the request's fault (a validation failure), not an internal error.
		if !enabled && (len(errs) != 1 || errs[0].Code() != "GRAPHQL_VALIDATION_FAILED") {
			t.Errorf("GraphiQL off: introspection errors = %+v, want one GRAPHQL_VALIDATION_FAILED", errs)
		}
	}
}
