package inventory

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	"boxoffice.dev/services/waitroom"
	"boxoffice.dev/services/waitroom/pass"
)

// do makes one REST request as user ("" = anonymous) with optional headers (name, value…),
// decodes a JSON answer into out and returns the status.
func do(t *testing.T, method, url, user string, body, out any, headers ...string) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set(identity.HeaderUser, user)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, url, err)
		}
	}
	return res.StatusCode
}

// problemBody is the part of an application/problem+json answer the tests read.
type problemBody struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

func TestEndToEnd(t *testing.T) {
	ns := testkit.StartNATS(t)
	inv := testkit.RunProcess(t, Run, map[string]string{
		"NATS_URL": ns.ClientURL(), "HOLD_TTL": "3s", "HOLD_SWEEP_INTERVAL": "50ms",
		"CATALOG_GRPC_ADDR": noCatalog(t), // the events of this test are the admin's
	})
	testkit.Eventually(t, 10*time.Second, "inventory ready", inv.Ready)
	base := inv.HTTPURL
	layout := Layout{Sections: []SectionLayout{{ID: "A", Class: "plateia", Rows: 2, SeatsPerRow: 5}}, GA: []GAClass{{Class: "pista", Capacity: 4}}}
	var m SeatMap
	if code := do(t, http.MethodPut, base+"/v1/admin/events/evt-001/seatmap", "", layout, &m); code != http.StatusOK || m.Counts.Total != 14 {
		t.Fatalf("PUT seatmap = %d %+v, want 200 with 14 tickets", code, m.Counts)
	}

	t.Run("bad input names the field", func(t *testing.T) {
		tests := []struct {
			name, method, path, user string
			body                     any
			want                     int
			field                    string
		}{
			{"hold without account", http.MethodPost, "/v1/events/evt-001/holds", "", map[string]any{"seats": []string{"A-1-1"}}, 401, ""},
			{"nine seats", http.MethodPost, "/v1/events/evt-001/holds", "acc-1", map[string]any{"seats": strings.Split("A-1-1 A-1-2 A-1-3 A-1-4 A-1-5 A-2-1 A-2-2 A-2-3 A-2-4", " ")}, 400, "seats"},
			{"bad seat id", http.MethodPost, "/v1/events/evt-001/holds", "acc-1", map[string]any{"seats": []string{"A1"}}, 400, "seats[0]"},
			{"no such seat", http.MethodPost, "/v1/events/evt-001/holds", "acc-1", map[string]any{"seats": []string{"Z-1-1"}}, 400, "seats"},
			{"quantity of the wrong type", http.MethodPost, "/v1/events/evt-001/holds", "acc-1", map[string]any{"class": "pista", "quantity": "two"}, 400, "quantity"},
			{"unknown field", http.MethodPost, "/v1/events/evt-001/holds", "acc-1", map[string]any{"seat": "A-1-1"}, 400, "seat"},
			{"no seat map", http.MethodPost, "/v1/events/evt-404/holds", "acc-1", map[string]any{"seats": []string{"A-1-1"}}, 404, ""},
			{"bad layout", http.MethodPut, "/v1/admin/events/evt-002/seatmap", "", map[string]any{"sections": []map[string]any{{"id": "A", "class": "c", "rows": 0, "seats_per_row": 1}}}, 400, "sections[0].rows"},
			{"bad limit", http.MethodGet, "/v1/holds?limit=x", "acc-1", nil, 400, "limit"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var p problemBody
				if code := do(t, tt.method, base+tt.path, tt.user, tt.body, &p); code != tt.want || p.Field != tt.field || p.Status != tt.want {
					t.Errorf("%s %s = %d %+v, want %d naming %q", tt.method, tt.path, code, p, tt.want, tt.field)
				}
			})
		}
	})

	// REST: hold, see it, release it, see the seats again.
	var h Hold
	if code := do(t, http.MethodPost, base+"/v1/events/evt-001/holds", "acc-1", map[string]any{"seats": []string{"A-1-2", "A-1-1"}}, &h); code != http.StatusCreated || !slices.Equal(h.Seats, []string{"A-1-1", "A-1-2"}) {
		t.Fatalf("POST hold = %d %+v, want 201 for A-1-1, A-1-2", code, h)
	}
	var p problemBody
	if code := do(t, http.MethodPost, base+"/v1/events/evt-001/holds", "acc-2", map[string]any{"seats": []string{"A-1-2"}}, &p); code != http.StatusConflict {
		t.Errorf("POST a held seat = %d, want 409", code)
	}
	if code := do(t, http.MethodGet, base+"/v1/holds/"+h.ID, "acc-2", nil, &p); code != http.StatusForbidden {
		t.Errorf("GET another account's hold = %d, want 403", code)
	}
	var page struct {
		Holds []Hold `json:"holds"`
	}
	if code := do(t, http.MethodGet, base+"/v1/holds", "acc-1", nil, &page); code != http.StatusOK || len(page.Holds) != 1 || page.Holds[0].ID != h.ID {
		t.Errorf("GET /v1/holds = %d %+v, want the one hold", code, page)
	}
	if code := do(t, http.MethodDelete, base+"/v1/holds/"+h.ID, "acc-1", nil, &h); code != http.StatusOK || h.Status != HoldReleased {
		t.Errorf("DELETE hold = %d %s, want 200 released", code, h.Status)
	}
	if do(t, http.MethodGet, base+"/v1/events/evt-001/seats", "", nil, &m); m.Counts.Available != 14 {
		t.Errorf("after release: %+v, want all 14 available", m.Counts)
	}

	// gRPC: place for a user, confirm as the order saga (no user), idempotently.
	client := inventoryv1.NewInventoryClient(inv.Dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	asFan := identity.OutgoingContext(ctx, identity.Identity{User: "acc-3"})
	gh, err := client.PlaceHold(asFan, &inventoryv1.PlaceHoldRequest{EventId: "evt-001", Class: "pista", Quantity: 2})
	if err != nil || gh.GetQuantity() != 2 || gh.GetAccount() != "acc-3" {
		t.Fatalf("gRPC PlaceHold = %v, %v", gh, err)
	}
	for range 2 {
		if c, err := client.ConfirmHold(ctx, &inventoryv1.ConfirmHoldRequest{HoldId: gh.GetId()}); err != nil || c.GetStatus() != inventoryv1.HoldStatus_HOLD_STATUS_CONFIRMED {
			t.Fatalf("gRPC ConfirmHold = %v, %v, want confirmed", c, err)
		}
	}
	if _, err := client.PlaceHold(ctx, &inventoryv1.PlaceHoldRequest{EventId: "evt-001", Seats: []string{"A-2-1"}}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC PlaceHold without a user = %v, want Unauthenticated", err)
	}
	if _, err := client.PlaceHold(asFan, &inventoryv1.PlaceHoldRequest{EventId: "evt-001", Class: "pista", Quantity: 3}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("gRPC PlaceHold of 3 of 2 left = %v, want AlreadyExists (conflict)", err)
	}
	if _, err := client.ReleaseHold(asFan, &inventoryv1.ReleaseHoldRequest{HoldId: gh.GetId()}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("gRPC ReleaseHold of a confirmed hold = %v, want AlreadyExists (conflict)", err)
	}
	av, err := client.BatchGetAvailability(ctx, &inventoryv1.BatchGetAvailabilityRequest{EventIds: []string{"evt-001", "evt-404"}})
	if err != nil || len(av.GetAvailability()) != 2 ||
		av.GetAvailability()[0].GetCounts().GetSold() != 2 ||
		av.GetAvailability()[1].GetLevel() != inventoryv1.AvailabilityLevel_AVAILABILITY_LEVEL_UNKNOWN {
		t.Errorf("BatchGetAvailability = %v, %v, want evt-001 with 2 sold, evt-404 unknown", av, err)
	}
	sm, err := client.GetSeatMap(ctx, &inventoryv1.GetSeatMapRequest{EventId: "evt-001"})
	if err != nil || len(sm.GetSections()) != 1 || sm.GetSections()[0].GetRows()[1].GetSeats()[4].GetId() != "A-2-5" {
		t.Errorf("GetSeatMap = %v, %v, want section A with seat A-2-5 last", sm, err)
	}

	// Expiry: a hold nobody confirms returns its seat, and a confirm after that is gone.
	late, err := client.PlaceHold(asFan, &inventoryv1.PlaceHoldRequest{EventId: "evt-001", Seats: []string{"A-2-1"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the sweeper expires the hold", func() bool {
		got, err := client.GetHold(asFan, &inventoryv1.GetHoldRequest{HoldId: late.GetId()})
		return err == nil && got.GetStatus() == inventoryv1.HoldStatus_HOLD_STATUS_EXPIRED
	})
	if _, err := client.ConfirmHold(ctx, &inventoryv1.ConfirmHoldRequest{HoldId: late.GetId()}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("ConfirmHold of an expired hold = %v, want FailedPrecondition (gone)", err)
	}
	if do(t, http.MethodGet, base+"/v1/events/evt-001/seats", "", nil, &m); m.Counts.Available != 12 || m.Counts.Sold != 2 {
		t.Errorf("after expiry: %+v, want 12 available, 2 sold", m.Counts)
	}

	// The counters the dashboards read.
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		"boxoffice_inventory_holds_placed_total 3\n",
		`boxoffice_inventory_holds_refused_total{reason="conflict"} 2` + "\n",
		`boxoffice_inventory_holds_refused_total{reason="invalid"} 3` + "\n",
		`boxoffice_inventory_holds_refused_total{reason="unauthorized"} 1` + "\n",
		`boxoffice_inventory_holds_ended_total{status="expired"} 1` + "\n",
		"boxoffice_inventory_tickets_sold_total 2\n",
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}

	// Every change was announced on the INVENTORY stream, once.
	want := []string{
		"placed " + h.ID, "released " + h.ID,
		"placed " + gh.GetId(), "confirmed " + gh.GetId(),
		"placed " + late.GetId(), "expired " + late.GetId(),
	}
	testkit.Eventually(t, 10*time.Second, "six hold events on the stream", func() bool {
		return len(streamEvents(t, ns.ClientURL())) >= len(want)
	})
	if got := streamEvents(t, ns.ClientURL()); !slices.Equal(got, want) {
		t.Errorf("stream =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// streamEvents reads the INVENTORY stream as "verb hold-id" lines, checking each message's
// id header and payload agree with its subject.
func streamEvents(t *testing.T, url string) []string {
	t.Helper()
	js := testkit.JetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, Stream)
	if err != nil {
		return nil
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		msg, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Hold struct {
				ID string `json:"id"`
			} `json:"hold"`
		}
		if err := json.Unmarshal(msg.Data, &ev); err != nil {
			t.Fatalf("event %d: %v", seq, err)
		}
		verb := strings.TrimPrefix(msg.Subject, SubjectPrefix)
		if ev.ID != msg.Header.Get(jetstream.MsgIDHeader) || ev.ID != ev.Hold.ID+"@"+verb || ev.Type != "inventory.hold."+verb {
			t.Errorf("event %d: subject %s, Nats-Msg-Id %s, payload id %s type %s: want them to agree",
				seq, msg.Subject, msg.Header.Get(jetstream.MsgIDHeader), ev.ID, ev.Type)
		}
		out = append(out, verb+" "+ev.Hold.ID)
	}
	return out
}

// TestFlashSaleWithARealWaitroom runs the waitroom and inventory side by side: a fan admitted
// by the waitroom holds seats with the pass it issued; a forged pass, a pass of another fan
// and no pass are all refused with 403.
func TestFlashSaleWithARealWaitroom(t *testing.T) {
	rds := testkit.StartRedis(t)
	priv := ed25519.NewKeyFromSeed([]byte(strings.Repeat("w", ed25519.SeedSize)))
	wr := testkit.RunProcess(t, waitroom.Run, map[string]string{
		"REDIS_URL": rds.URL(), "WAITROOM_SIGNING_KEY": pass.EncodePrivateKey(priv), "WAITROOM_ADMIT_INTERVAL": "20ms",
	})
	inv := testkit.RunProcess(t, Run, map[string]string{
		"WAITROOM_PUBLIC_KEY": pass.EncodePublicKey(priv.Public().(ed25519.PublicKey)),
		"CATALOG_GRPC_ADDR":   noCatalog(t),
	})
	testkit.Eventually(t, 10*time.Second, "waitroom and inventory ready", func() bool { return wr.Ready() && inv.Ready() })
	wrBase, base := wr.HTTPURL, inv.HTTPURL
	flash := Layout{FlashSale: true, Sections: []SectionLayout{{ID: "A", Class: "plateia", Rows: 1, SeatsPerRow: 4}}}
	if code := do(t, http.MethodPut, base+"/v1/admin/events/evt-flash/seatmap", "", flash, nil); code != http.StatusOK {
		t.Fatalf("PUT seatmap = %d", code)
	}

	// The waitroom queues fans only for a sale it knows is open: an admin setting the rate
	// opens it, as the catalog's flash-sale flag would.
	rate := map[string]int{"admit_per_second": waitroom.DefaultAdmitPerSecond}
	if code := do(t, http.MethodPut, wrBase+"/v1/admin/events/evt-flash/queue", "", rate, nil); code != http.StatusOK {
		t.Fatalf("PUT queue settings = %d, want 200", code)
	}
	var st waitroom.Status
	for _, fan := range []string{"acc-1", "acc-2"} {
		if code := do(t, http.MethodPost, wrBase+"/v1/events/evt-flash/queue", fan, nil, &st); code != http.StatusOK {
			t.Fatalf("join %s = %d", fan, code)
		}
	}
	testkit.Eventually(t, 5*time.Second, "acc-1 admitted", func() bool {
		do(t, http.MethodGet, wrBase+"/v1/events/evt-flash/queue/me", "acc-1", nil, &st)
		return st.State == waitroom.Admitted
	})
	real := st.Pass
	_, forger, _ := ed25519.GenerateKey(nil)
	forged := pass.Sign(forger, pass.Pass{EventID: "evt-flash", User: "acc-1", ExpiresAt: time.Now().Add(time.Minute)})

	tests := []struct {
		name, user, pass string
		want             int
	}{
		{"no pass", "acc-1", "", http.StatusForbidden},
		{"forged pass", "acc-1", forged, http.StatusForbidden},
		{"another fan's pass", "acc-2", real, http.StatusForbidden},
		{"garbage", "acc-1", "x.y", http.StatusForbidden},
		{"the waitroom's pass", "acc-1", real, http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var headers []string
			if tt.pass != "" {
				headers = []string{HeaderAdmissionPass, tt.pass}
			}
			var answer json.RawMessage // a hold or a problem
			code := do(t, http.MethodPost, base+"/v1/events/evt-flash/holds", tt.user, map[string]any{"seats": []string{"A-1-1"}}, &answer, headers...)
			if code != tt.want {
				t.Errorf("hold with %s = %d %s, want %d", tt.name, code, answer, tt.want)
			}
		})
	}
	var m SeatMap
	if do(t, http.MethodGet, base+"/v1/events/evt-flash/seats", "", nil, &m); m.Counts.Held != 1 {
		t.Errorf("seats held = %d, want only the admitted fan's 1", m.Counts.Held)
	}
}

func TestRunRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad public key", map[string]string{"WAITROOM_PUBLIC_KEY": "not-a-key"}, "WAITROOM_PUBLIC_KEY"},
		{"short public key", map[string]string{"WAITROOM_PUBLIC_KEY": "AAAA"}, "WAITROOM_PUBLIC_KEY"},
		{"bad hold TTL", map[string]string{"HOLD_TTL": "forever"}, "HOLD_TTL"},
		{"no account cap", map[string]string{"HOLD_ACCOUNT_CAP": "0"}, "HOLD_ACCOUNT_CAP"},
		{"account cap past any venue", map[string]string{"HOLD_ACCOUNT_CAP": "1000000"}, "HOLD_ACCOUNT_CAP"},
		{"catalog address without a port", map[string]string{"CATALOG_GRPC_ADDR": "catalog"}, "CATALOG_GRPC_ADDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(context.Background(), nil, func(k string) string { return tt.env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want a configuration error naming %s", err, tt.want)
			}
		})
	}
}
