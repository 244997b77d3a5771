package inventory

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/catalog"
	"boxoffice.dev/services/waitroom/pass"
)

// TestSeatMapsFollowTheCatalog runs the catalog and inventory in-process on one NATS, as
// every run mode does, inventory first so that the catalog's stream appears after it: events
// created through the catalog's admin API get their seat maps from the catalog's events
// alone, a redelivered event changes nothing under a hold, and a flash sale's map needs
// the waiting room's pass.
func TestSeatMapsFollowTheCatalog(t *testing.T) {
	ns := testkit.StartNATS(t)
	priv := ed25519.NewKeyFromSeed([]byte(strings.Repeat("k", ed25519.SeedSize)))
	catalogGRPC := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	inv := testkit.RunProcess(t, Run, map[string]string{
		"NATS_URL": ns.ClientURL(), "WAITROOM_PUBLIC_KEY": pass.EncodePublicKey(priv.Public().(ed25519.PublicKey)),
		"CATALOG_GRPC_ADDR": catalogGRPC, // its catch-up waits for the catalog
	})
	cat := testkit.RunProcess(t, catalog.Run, map[string]string{"NATS_URL": ns.ClientURL(), "GRPC_ADDR": catalogGRPC})
	js := testkit.JetStream(t, ns.ClientURL())
	testkit.Eventually(t, 10*time.Second, "inventory follows the catalog's stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.Consumer(ctx, CatalogStream, SeatMapConsumer)
		return err == nil
	})

	venue := map[string]any{"id": "ven-e2e", "name": "Sala E2E", "city": "Porto", "country": "PT", "capacity": 300,
		"sections": []map[string]any{{"name": "Plateia", "capacity": 240, "seated": true}, {"name": "Pista", "capacity": 60}}}
	if code := do(t, http.MethodPost, cat.HTTPURL+"/v1/admin/venues", "", venue, nil); code != http.StatusCreated {
		t.Fatalf("POST venue = %d, want 201", code)
	}
	// The processes run on the real clock: the events go on sale when told (onSale from now)
	// and start in a month.
	starts := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	create := func(t *testing.T, id string, flash bool, onSale time.Duration) {
		t.Helper()
		ev := map[string]any{"id": id, "title": "Concerto " + id, "venue_id": "ven-e2e", "flash_sale": flash,
			"starts_at": starts.Format(time.RFC3339), "on_sale_at": time.Now().Add(onSale).UTC().Format(time.RFC3339),
			"ticket_classes": []map[string]any{
				{"id": "plateia", "name": "Plateia", "price": map[string]any{"currency": "EUR", "minor": 4000}, "seated": true, "capacity": 240},
				{"id": "pista", "name": "Pista", "price": map[string]any{"currency": "EUR", "minor": 2500}, "capacity": 60},
			}}
		if code := do(t, http.MethodPost, cat.HTTPURL+"/v1/admin/events", "", ev, nil); code != http.StatusCreated {
			t.Fatalf("POST event %s = %d, want 201", id, code)
		}
	}
	seats := func(t *testing.T, id string) (SeatMap, int) {
		t.Helper()
		var m SeatMap
		return m, do(t, http.MethodGet, inv.HTTPURL+"/v1/events/"+id+"/seats", "", nil, &m)
	}

	t.Run("a created event gets its seat map within a second", func(t *testing.T) {
		create(t, "evt-e2e-1", false, -time.Hour)
		var m SeatMap
		testkit.Eventually(t, time.Second, "inventory serves evt-e2e-1's seats", func() bool {
			var code int
			m, code = seats(t, "evt-e2e-1")
			return code == http.StatusOK
		})
		if m.Counts.Total != 300 || m.FlashSale || len(m.Sections) != 1 || len(m.Sections[0].Rows) != 12 || len(m.GA) != 1 || m.GA[0].Total != 60 {
			t.Errorf("seat map = %d tickets, flash %v, %d sections, GA %+v; want DefaultLayout's 12 rows of plateia and 60 pista, no flash sale",
				m.Counts.Total, m.FlashSale, len(m.Sections), m.GA)
		}
	})

	t.Run("a redelivered event does not duplicate or reset a held map", func(t *testing.T) {
		var h Hold
		if code := do(t, http.MethodPost, inv.HTTPURL+"/v1/events/evt-e2e-1/holds", "acc-1", map[string]any{"seats": []string{"A-1-1", "A-1-2"}}, &h); code != http.StatusCreated {
			t.Fatalf("POST hold = %d, want 201", code)
		}
		redeliver(t, js, "boxoffice.catalog.event.created", "evt-e2e-1")
		testkit.Eventually(t, 5*time.Second, "the redelivered change is applied", func() bool {
			return metricValue(t, inv.HTTPURL, `boxoffice_inventory_seatmap_changes_total{outcome="current"}`) >= 1
		})
		m, _ := seats(t, "evt-e2e-1")
		if m.Counts.Total != 300 || m.Counts.Held != 2 {
			t.Errorf("after the redelivery: %d tickets, %d held; want 300 and the fan's 2 still held", m.Counts.Total, m.Counts.Held)
		}

		// The catalog changes the classes: the held map keeps its seats.
		patch := map[string]any{"ticket_classes": []map[string]any{
			{"id": "plateia", "name": "Plateia", "price": map[string]any{"currency": "EUR", "minor": 4000}, "seated": true, "capacity": 200},
		}}
		if code := do(t, http.MethodPatch, cat.HTTPURL+"/v1/admin/events/evt-e2e-1", "", patch, nil); code != http.StatusOK {
			t.Fatalf("PATCH classes = %d, want 200", code)
		}
		testkit.Eventually(t, 5*time.Second, "the new classes are seen", func() bool {
			return metricValue(t, inv.HTTPURL, `boxoffice_inventory_seatmap_changes_total{outcome="in_use"}`) >= 1
		})
		if m, _ := seats(t, "evt-e2e-1"); m.Counts.Total != 300 || m.Counts.Held != 2 {
			t.Errorf("after new classes: %d tickets, %d held; want the same 300 and 2 held", m.Counts.Total, m.Counts.Held)
		}
	})

	t.Run("holds wait for the sale the catalog announces", func(t *testing.T) {
		create(t, "evt-e2e-soon", false, time.Hour)
		testkit.Eventually(t, time.Second, "inventory serves evt-e2e-soon's seats", func() bool {
			_, code := seats(t, "evt-e2e-soon")
			return code == http.StatusOK
		})
		hold := map[string]any{"class": "pista", "quantity": 1}
		var p problemBody
		if code := do(t, http.MethodPost, inv.HTTPURL+"/v1/events/evt-e2e-soon/holds", "acc-1", hold, &p); code != http.StatusUnprocessableEntity || !strings.Contains(p.Detail, "the sale opens at") {
			t.Errorf("hold before the sale = %d %q, want 422 saying when the sale opens", code, p.Detail)
		}

		// The catalog moves the sale earlier: inventory follows and the hold goes through.
		patch := map[string]any{"on_sale_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}
		if code := do(t, http.MethodPatch, cat.HTTPURL+"/v1/admin/events/evt-e2e-soon", "", patch, nil); code != http.StatusOK {
			t.Fatalf("PATCH on_sale_at = %d, want 200", code)
		}
		var code int
		testkit.Eventually(t, 5*time.Second, "a hold of evt-e2e-soon once its sale opened", func() bool {
			code = do(t, http.MethodPost, inv.HTTPURL+"/v1/events/evt-e2e-soon/holds", "acc-1", hold, nil)
			return code != http.StatusUnprocessableEntity
		})
		if code != http.StatusCreated {
			t.Errorf("hold after the catalog opened the sale = %d, want 201", code)
		}
	})

	t.Run("an unreadable change is dropped, not redelivered forever", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := js.Publish(ctx, "boxoffice.catalog.event.updated", []byte("not a change")); err != nil {
			t.Fatal(err)
		}
		cons, err := js.Consumer(ctx, CatalogStream, SeatMapConsumer)
		if err != nil {
			t.Fatal(err)
		}
		var info *jetstream.ConsumerInfo
		testkit.Eventually(t, 5*time.Second, "every change settled", func() bool {
			info, err = cons.Info(ctx)
			return err == nil && info.NumPending == 0 && info.NumAckPending == 0
		})
		if info.NumRedelivered != 0 {
			t.Errorf("consumer redelivered %d changes, want none: a bad payload is terminated", info.NumRedelivered)
		}
	})

	t.Run("a deleted consumer is made again", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteConsumer(ctx, CatalogStream, SeatMapConsumer); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 5*time.Second, "inventory follows the catalog's stream again", func() bool {
			_, err := js.Consumer(ctx, CatalogStream, SeatMapConsumer)
			return err == nil
		})
	})

	t.Run("a flash sale's map needs the waiting room's pass", func(t *testing.T) {
		create(t, "evt-e2e-flash", true, -time.Hour)
		testkit.Eventually(t, time.Second, "inventory serves evt-e2e-flash's seats", func() bool {
			_, code := seats(t, "evt-e2e-flash")
			return code == http.StatusOK
		})
		if m, _ := seats(t, "evt-e2e-flash"); !m.FlashSale {
			t.Errorf("evt-e2e-flash flash_sale = false, want true as the catalog says")
		}
		hold := map[string]any{"seats": []string{"A-1-1"}}
		var p problemBody
		if code := do(t, http.MethodPost, inv.HTTPURL+"/v1/events/evt-e2e-flash/holds", "acc-1", hold, &p); code != http.StatusForbidden {
			t.Errorf("hold without a pass = %d, want 403", code)
		}
		admitted := pass.Sign(priv, pass.Pass{EventID: "evt-e2e-flash", User: "acc-1", ExpiresAt: time.Now().Add(time.Minute)})
		if code := do(t, http.MethodPost, inv.HTTPURL+"/v1/events/evt-e2e-flash/holds", "acc-1", hold, nil, HeaderAdmissionPass, admitted); code != http.StatusCreated {
			t.Errorf("hold with the waiting room's pass = %d, want 201", code)
		}
	})
}

// redeliver publishes the last change on subject again, under a new Nats-Msg-Id so the
// stream keeps it: to the consumer, the same change arriving twice, as after a lost ack.
func redeliver(t *testing.T, js jetstream.JetStream, subject, event string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, CatalogStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatalf("last message on %s: %v", subject, err)
	}
	var change struct {
		Event struct{ ID string } `json:"event"`
	}
	if err := json.Unmarshal(msg.Data, &change); err != nil || change.Event.ID != event {
		t.Fatalf("last message on %s is about %q (%v), want %s", subject, change.Event.ID, err, event)
	}
	if _, err := js.Publish(ctx, subject, msg.Data, jetstream.WithMsgID(msg.Header.Get(jetstream.MsgIDHeader)+"-again")); err != nil {
		t.Fatalf("publish again: %v", err)
	}
}

// metricValue is the value of the series named exactly by series on base's /metrics, or 0.
func metricValue(t *testing.T, base, series string) float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return 0
}
