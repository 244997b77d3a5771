package order

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/testkit"
)

func TestEndToEnd(t *testing.T) {
	s := startSystem(t, nil, nil)
	eventID := s.addEvent(t, 50)

	t.Run("an order is paid, confirmed and listed", func(t *testing.T) {
		holdID := s.hold(t, eventID, "acc_1", classOK)
		var o Order
		code, hdr, raw := s.order.send(t, http.MethodPost, "/v1/orders", "acc_1", map[string]string{IdempotencyKeyHeader: "k-1"}, map[string]string{"hold_id": holdID})
		if code != http.StatusCreated || json.Unmarshal(raw, &o) != nil || o.Amount != (money.Money{Currency: "BRL", Minor: 12550}) || hdr.Get("Location") != "/v1/orders/"+o.ID {
			t.Fatalf("POST /v1/orders = %d %s, want 201 with an order of BRL 125.50", code, raw)
		}
		testkit.Eventually(t, 10*time.Second, "the order is confirmed", func() bool { return s.orderOf(t, "acc_1", o.ID).State == Confirmed })
		var page Page
		s.order.do(t, http.MethodGet, "/v1/orders?limit=5", "acc_1", nil, http.StatusOK, &page)
		if len(page.Orders) != 1 || page.Orders[0].ID != o.ID {
			t.Errorf("GET /v1/orders = %+v, want acc_1's one order", page)
		}
		s.order.do(t, http.MethodGet, "/v1/orders/"+o.ID, "acc_2", nil, http.StatusNotFound, nil)
	})

	t.Run("the same key twenty times at once makes one order", func(t *testing.T) {
		holdID := s.hold(t, eventID, "acc_2", classOK)
		ids := make([]string, 20)
		codes := make([]int, 20)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				code, _, raw := s.order.send(t, http.MethodPost, "/v1/orders", "acc_2", map[string]string{IdempotencyKeyHeader: "same-key"}, map[string]string{"hold_id": holdID})
				var o Order
				_ = json.Unmarshal(raw, &o)
				ids[i], codes[i] = o.ID, code
			})
		}
		wg.Wait()
		created := 0
		for i := range ids {
			if ids[i] == "" || ids[i] != ids[0] {
				t.Errorf("request %d got order %q (status %d), request 0 got %q; want one order", i, ids[i], codes[i], ids[0])
			}
			if codes[i] == http.StatusCreated {
				created++
			}
		}
		var page Page
		s.order.do(t, http.MethodGet, "/v1/orders", "acc_2", nil, http.StatusOK, &page)
		if created != 1 || len(page.Orders) != 1 {
			t.Errorf("20 identical requests: %d answered 201, acc_2 has %d orders; want 1 and 1", created, len(page.Orders))
		}
		code, _, raw := s.order.send(t, http.MethodPost, "/v1/orders", "acc_2", map[string]string{IdempotencyKeyHeader: "same-key"}, map[string]string{"hold_id": "another-hold"})
		if code != http.StatusUnprocessableEntity || !strings.Contains(string(raw), `"field":"Idempotency-Key"`) {
			t.Errorf("same key, other body = %d %s, want 422 naming Idempotency-Key", code, raw)
		}
	})

	t.Run("bad input is a problem naming the field", func(t *testing.T) {
		otherFansHold := s.hold(t, eventID, "acc_5", classOK)
		tests := []struct {
			name    string
			account string
			headers map[string]string
			body    any
			status  int
			field   string
		}{
			{"no key", "acc_3", nil, map[string]string{"hold_id": "h"}, http.StatusBadRequest, IdempotencyKeyHeader},
			{"no hold", "acc_3", map[string]string{IdempotencyKeyHeader: "k"}, map[string]string{}, http.StatusBadRequest, "hold_id"},
			{"hold of the wrong type", "acc_3", map[string]string{IdempotencyKeyHeader: "k"}, map[string]int{"hold_id": 7}, http.StatusBadRequest, "hold_id"},
			{"unknown hold", "acc_3", map[string]string{IdempotencyKeyHeader: "k2"}, map[string]string{"hold_id": "no-such-hold"}, http.StatusUnprocessableEntity, "hold_id"},
			{"another fan's hold", "acc_3", map[string]string{IdempotencyKeyHeader: "k3"}, map[string]string{"hold_id": otherFansHold}, http.StatusUnprocessableEntity, "hold_id"},
			{"anonymous", "", map[string]string{IdempotencyKeyHeader: "k"}, map[string]string{"hold_id": "h"}, http.StatusUnauthorized, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				code, hdr, raw := s.order.send(t, http.MethodPost, "/v1/orders", tt.account, tt.headers, tt.body)
				var p struct{ Field string }
				_ = json.Unmarshal(raw, &p)
				if code != tt.status || hdr.Get("Content-Type") != "application/problem+json" || p.Field != tt.field {
					t.Errorf("POST /v1/orders = %d %s %s, want %d problem+json naming %q", code, hdr.Get("Content-Type"), raw, tt.status, tt.field)
				}
			})
		}
		code, _, raw := s.order.send(t, http.MethodGet, "/v1/orders?limit=1000", "acc_3", nil, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(raw), `"field":"limit"`) {
			t.Errorf("GET /v1/orders?limit=1000 = %d %s, want 400 naming limit", code, raw)
		}
	})

	t.Run("gRPC", func(t *testing.T) {
		client := orderv1.NewOrderClient(s.order.Dial(t))
		ctx, cancel := context.WithTimeout(identity.OutgoingContext(context.Background(), identity.Identity{User: "acc_4"}), 10*time.Second)
		defer cancel()
		holdID := s.hold(t, eventID, "acc_4", classDecline)
		res, err := client.CreateOrder(ctx, &orderv1.CreateOrderRequest{HoldId: holdID, IdempotencyKey: "g-1"})
		if err != nil || !res.GetCreated() {
			t.Fatalf("CreateOrder = %v, %v; want a new order", res, err)
		}
		again, err := client.CreateOrder(ctx, &orderv1.CreateOrderRequest{HoldId: holdID, IdempotencyKey: "g-1"})
		if err != nil || again.GetCreated() || again.GetOrder().GetId() != res.GetOrder().GetId() {
			t.Errorf("CreateOrder replayed = %v, %v; want the same order, not created", again, err)
		}
		id := res.GetOrder().GetId()
		testkit.Eventually(t, 10*time.Second, "the declined order fails", func() bool {
			o, err := client.GetOrder(ctx, &orderv1.GetOrderRequest{Id: id})
			return err == nil && o.GetState() == orderv1.OrderState_ORDER_STATE_FAILED && strings.HasPrefix(o.GetFailureReason(), ReasonDeclined)
		})
		list, err := client.ListOrders(ctx, &orderv1.ListOrdersRequest{})
		if err != nil || len(list.GetOrders()) != 1 {
			t.Errorf("ListOrders = %v, %v; want acc_4's one order", list, err)
		}
		_, err = client.CreateOrder(ctx, &orderv1.CreateOrderRequest{HoldId: holdID})
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), IdempotencyKeyHeader) {
			t.Errorf("CreateOrder without a key = %v, want InvalidArgument naming %s", err, IdempotencyKeyHeader)
		}
		anon, cancelAnon := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancelAnon()
		if _, err := client.ListOrders(anon, &orderv1.ListOrdersRequest{}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("ListOrders without a user = %v, want Unauthenticated", err)
		}
	})
}
