package catalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	"boxoffice.dev/services/catalog"
)

// TestEndToEnd runs the whole catalog in-process with its demo data and NATS, and uses it
// as the gateway and the BFFs would: REST reads and admin writes, gRPC batch reads, and the
// change events on the CATALOG stream.
func TestEndToEnd(t *testing.T) {
	natsURL := testkit.StartNATS(t).ClientURL()
	proc := testkit.RunProcess(t, catalog.Run, map[string]string{"NATS_URL": natsURL, "SEED_DEMO": "true"})
	base := proc.HTTPURL
	testkit.Eventually(t, 15*time.Second, "catalog ready", proc.Ready)

	t.Run("list by city ignores accents", func(t *testing.T) {
		var page struct {
			Events     []catalog.Event `json:"events"`
			NextCursor string          `json:"next_cursor"`
		}
		call(t, "GET", base+"/v1/events?city="+url.QueryEscape("SAO PAULO")+"&limit=5", nil, http.StatusOK, &page)
		if len(page.Events) != 5 || page.NextCursor == "" {
			t.Fatalf("page = %d events, next %q; want 5 and a cursor", len(page.Events), page.NextCursor)
		}
		for _, e := range page.Events {
			if e.City != "São Paulo" {
				t.Errorf("event %s in %q, want São Paulo", e.ID, e.City)
			}
		}
	})

	t.Run("bad input names the field", func(t *testing.T) {
		tests := []struct {
			name, method, path, body, field string
		}{
			{"bad from", "GET", "/v1/events?from=tomorrow", "", "from"},
			{"bad limit", "GET", "/v1/events?limit=1000", "", "limit"},
			{"no title", "POST", "/v1/admin/events", `{"venue_id":"ven-sp-01"}`, "title"},
			{"bad start", "POST", "/v1/admin/events", `{"title":"X","starts_at":"soon"}`, "starts_at"},
			{"unknown venue", "POST", "/v1/admin/events", newEvent("evt-e2e-bad", "nope"), "venue_id"},
			{"bad country", "POST", "/v1/admin/venues", `{"name":"Sala","city":"Porto","country":"Portugal","capacity":10}`, "country"},
			{"patch changes id", "PATCH", "/v1/admin/events/evt-001", `{"id":"evt-002"}`, "id"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var p struct{ Field string }
				res := call(t, tt.method, base+tt.path, strings.NewReader(tt.body), http.StatusBadRequest, &p)
				if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || p.Field != tt.field {
					t.Errorf("%s %s = %s field %q, want application/problem+json field %q", tt.method, tt.path, ct, p.Field, tt.field)
				}
			})
		}
	})

	// Follow the stream from now on, to see the writes below announced.
	changes := subscribe(t, natsURL, "evt-e2e@")

	var created catalog.Event
	call(t, "POST", base+"/v1/admin/events", strings.NewReader(newEvent("evt-e2e", "ven-lis-01")), http.StatusCreated, &created)
	if created.City != "Lisboa" || created.Version != 1 {
		t.Errorf("created event in %q version %d, want Lisboa version 1", created.City, created.Version)
	}
	var patched catalog.Event
	call(t, "PATCH", base+"/v1/admin/events/evt-e2e", strings.NewReader(`{"title":"Fado à Meia-Noite"}`), http.StatusOK, &patched)
	if patched.Title != "Fado à Meia-Noite" || patched.Version != 2 || len(patched.TicketClasses) != 1 {
		t.Errorf("patched = %q version %d with %d classes, want the new title, version 2, classes kept", patched.Title, patched.Version, len(patched.TicketClasses))
	}
	for _, want := range []string{"boxoffice.catalog.event.created evt-e2e@v1", "boxoffice.catalog.event.updated evt-e2e@v2"} {
		select {
		case got := <-changes:
			if got != want {
				t.Errorf("stream message = %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %q on the stream within 5s", want)
		}
	}

	t.Run("grpc", func(t *testing.T) {
		c := catalogv1.NewCatalogClient(proc.Dial(t))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()

		batch, err := c.BatchGetEvents(ctx, &catalogv1.BatchGetEventsRequest{Ids: []string{"evt-e2e", "evt-none", catalog.DemoFlashSaleID}})
		if err != nil {
			t.Fatalf("BatchGetEvents: %v", err)
		}
		if len(batch.GetEvents()) != 2 || batch.GetEvents()[0].GetTitle() != "Fado à Meia-Noite" || !batch.GetEvents()[1].GetFlashSale() ||
			len(batch.GetNotFound()) != 1 || batch.GetNotFound()[0] != "evt-none" {
			t.Errorf("BatchGetEvents = %v", batch)
		}
		list, err := c.ListEvents(ctx, &catalogv1.ListEventsRequest{
			Filter: &catalogv1.EventFilter{City: "berlin", Tag: "jazz"},
			Page:   &commonv1.PageRequest{PageSize: 10},
		})
		if err != nil || len(list.GetEvents()) != 2 || list.GetPage().GetNextPageToken() != "" {
			t.Errorf("ListEvents(berlin jazz) = %v, %v; want 2 events on one page", list, err)
		}
		venues, err := c.BatchGetVenues(ctx, &catalogv1.BatchGetVenuesRequest{Ids: []string{"ven-ber-02", "ven-sp-01"}})
		if err != nil || len(venues.GetVenues()) != 2 || venues.GetVenues()[0].GetCity() != "Berlin" {
			t.Errorf("BatchGetVenues = %v, %v", venues, err)
		}
		if _, err := c.GetEvent(ctx, &catalogv1.GetEventRequest{Id: "evt-none"}); status.Code(err) != codes.NotFound {
			t.Errorf("GetEvent(evt-none) = %v, want NotFound", err)
		}
	})
}

func newEvent(id, venue string) string {
	return fmt.Sprintf(`{"id":%q,"title":"Fado à Tarde","venue_id":%q,"performers":["Ana Moura Nova"],
		"starts_at":"2031-03-01T21:00:00Z","on_sale_at":"2031-01-01T10:00:00Z","tags":["fado"],
		"ticket_classes":[{"id":"ga","name":"Geral","price":{"currency":"EUR","minor":2500},"capacity":100}]}`, id, venue)
}

// call sends a request, checks the status and decodes the JSON body into out.
func call(t *testing.T, method, url string, body io.Reader, want int, out any) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", method, url, res.StatusCode, b, want)
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(out); err != nil {
		t.Fatalf("%s %s: decode %s: %v", method, url, b, err)
	}
	return res
}

// subscribe follows boxoffice.catalog.event.> on the CATALOG stream from now on and sends
// "<subject> <Nats-Msg-Id>" for each message whose id starts with prefix (the demo's own
// may still be arriving).
func subscribe(t *testing.T, natsURL, prefix string) <-chan string {
	t.Helper()
	js := testkit.JetStream(t, natsURL)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, catalog.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"boxoffice.catalog.event.>"},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	out := make(chan string, 16)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if id := m.Headers().Get(jetstream.MsgIDHeader); strings.HasPrefix(id, prefix) {
			out <- m.Subject() + " " + id
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return out
}
