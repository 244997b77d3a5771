package order

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"

	"boxoffice.dev/platform/testkit"
)

// TestSagaUnderPaymentFaults is the saga's acceptance test, against the real services: 500
// orders while payment refuses 30% of its calls (the control hook's error rate) and answers
// 10% of its charges only after order's deadline, with the money taken (a timeout whose
// outcome must be settled); one order in ten is for a class whose price payment declines.
// The notification service is restarted while the sagas run.
//
// Afterwards: every order is confirmed or failed; every confirmed order has exactly one
// succeeded charge and a confirmed hold, every failed one no money kept and its hold back on
// sale; the seat counts add up; every order has exactly one notification of its outcome.
func TestSagaUnderPaymentFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("500 orders through five services")
	}
	const orders = 500
	paymentTimeout := 250 * time.Millisecond
	s := startSystem(t,
		map[string]string{"ORDER_PAYMENT_TIMEOUT": paymentTimeout.String(), "ORDER_STALL_AFTER": "1s", "ORDER_WORKERS": "32"},
		map[string]string{"PAYMENT_LATE_RATE": "0.1", "PAYMENT_LATE_LATENCY": (4 * paymentTimeout).String(), "PAYMENT_SEED": "42"})
	s.payment.do(t, http.MethodPut, "/control", "", map[string]any{"error_rate": 0.3}, http.StatusOK, nil)
	eventID := s.addEvent(t, orders)

	accounts := make([]string, orders)
	classes := make([]string, orders)
	holds := make([]string, orders)
	ids := make([]string, orders)
	for i := range orders {
		accounts[i], classes[i] = fmt.Sprintf("fan-%03d", i), classOK
		if i%10 == 0 {
			classes[i] = classDecline
		}
	}
	parallel(orders, 16, func(i int) { holds[i] = s.hold(t, eventID, accounts[i], classes[i]) })

	start := time.Now()
	// A client retries a 503 with the same Idempotency-Key, as the contract invites: it gets
	// the one order however many of its tries reached the server.
	place := func(i int) {
		var o Order
		code, raw := 0, []byte(nil)
		for try := 0; try < 3 && (try == 0 || code == http.StatusServiceUnavailable); try++ {
			code, _, raw = s.order.send(t, http.MethodPost, "/v1/orders", accounts[i],
				map[string]string{IdempotencyKeyHeader: "order-" + accounts[i]}, map[string]string{"hold_id": holds[i]})
		}
		if code != http.StatusCreated && code != http.StatusOK || json.Unmarshal(raw, &o) != nil {
			t.Errorf("POST /v1/orders for %s = %d %s, want 201", accounts[i], code, raw)
			return
		}
		ids[i] = o.ID
	}
	// Half the orders, a notification restart while their sagas run, the other half.
	parallel(orders/2, 16, place)
	if err := s.notification.Stop(); err != nil {
		t.Errorf("notification: Run = %v, want nil after cancel", err)
	}
	s.notification.Start(t)
	parallel(orders/2, 16, func(i int) { place(orders/2 + i) })
	if t.Failed() {
		t.FailNow()
	}

	final := make([]Order, orders)
	testkit.Eventually(t, 45*time.Second, "every order is confirmed or failed", func() bool {
		var pending atomic.Int32
		parallel(orders, 16, func(i int) {
			if final[i].State.Final() {
				return
			}
			if final[i] = s.orderOf(t, accounts[i], ids[i]); !final[i].State.Final() {
				pending.Add(1)
			}
		})
		return pending.Load() == 0
	})
	t.Logf("500 orders final in %v", time.Since(start).Round(time.Millisecond))
	s.payment.do(t, http.MethodPut, "/control", "", map[string]any{}, http.StatusOK, nil) // faults over: read the records

	charges := s.chargesByOrder(t)
	inventory := inventoryv1.NewInventoryClient(s.inventory.Dial(t))
	var mu sync.Mutex
	confirmed := map[string]int{}
	reasons := map[string]int{}
	parallel(orders, 16, func(i int) {
		o := final[i]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h, err := inventory.GetHold(ctx, &inventoryv1.GetHoldRequest{HoldId: o.HoldID})
		if err != nil {
			t.Errorf("GetHold(%s): %v", o.HoldID, err)
			return
		}
		cs := charges[o.ID]
		if len(cs) > 1 {
			t.Errorf("order %s has %d charges, want at most one", o.ID, len(cs))
		}
		switch o.State {
		case Confirmed:
			if len(cs) != 1 || cs[0].Status != "succeeded" || cs[0].ID != o.ChargeID {
				t.Errorf("confirmed order %s: charges %+v, want one succeeded charge %s", o.ID, cs, o.ChargeID)
			}
			if h.GetStatus() != inventoryv1.HoldStatus_HOLD_STATUS_CONFIRMED {
				t.Errorf("confirmed order %s: hold %s is %v, want confirmed", o.ID, o.HoldID, h.GetStatus())
			}
		case Failed:
			for _, c := range cs {
				if c.Status == "succeeded" {
					t.Errorf("failed order %s (%s) kept the money of charge %s", o.ID, o.FailureReason, c.ID)
				}
			}
			if st := h.GetStatus(); st != inventoryv1.HoldStatus_HOLD_STATUS_RELEASED && st != inventoryv1.HoldStatus_HOLD_STATUS_EXPIRED {
				t.Errorf("failed order %s: hold %s is %v, want released or expired", o.ID, o.HoldID, st)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if o.State == Confirmed {
			confirmed[classes[i]]++
		} else {
			reasons[o.FailureReason]++
		}
	})
	t.Logf("confirmed by class %v; failure reasons %v", confirmed, reasons)
	if confirmed[classOK] == 0 || len(reasons) == 0 || confirmed[classDecline] != 0 {
		t.Errorf("confirmed %v, failed %v: want confirmations and failures, and no declined class confirmed", confirmed, reasons)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	seats, err := inventory.GetSeatMap(ctx, &inventoryv1.GetSeatMapRequest{EventId: eventID})
	if err != nil {
		t.Fatal(err)
	}
	for _, ga := range seats.GetGa() {
		c := ga.GetCounts()
		if int(c.GetSold()) != confirmed[ga.GetClass()] || c.GetHeld() != 0 || c.GetSold()+c.GetAvailable() != c.GetTotal() {
			t.Errorf("class %s: %+v, want sold = %d confirmed orders, none held, sold + available = total", ga.GetClass(), c, confirmed[ga.GetClass()])
		}
	}

	testkit.Eventually(t, 20*time.Second, "every order's outcome is in its fan's inbox", func() bool {
		var missing atomic.Int32
		parallel(orders, 16, func(i int) {
			if s.inbox(t, accounts[i])[final[i].ID+"."+string(final[i].State)] != 1 {
				missing.Add(1)
			}
		})
		return missing.Load() == 0
	})
	parallel(orders, 16, func(i int) {
		want := final[i].ID + "." + string(final[i].State)
		if got := s.inbox(t, accounts[i]); len(got) != 1 || got[want] != 1 {
			t.Errorf("%s's inbox = %v, want exactly one message, for %s", accounts[i], got, want)
		}
	})
}

// parallel runs f(0..n-1) on at most width goroutines and waits for them.
func parallel(n, width int, f func(i int)) {
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// charge is payment's admin view of a charge.
type charge struct {
	ID      string `json:"id"`
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
}

// chargesByOrder reads every charge from payment's admin list.
func (s *system) chargesByOrder(t *testing.T) map[string][]charge {
	t.Helper()
	out := map[string][]charge{}
	cursor := ""
	for range 100 {
		var page struct {
			Charges []charge `json:"charges"`
			Next    string   `json:"next_cursor"`
		}
		s.payment.do(t, http.MethodGet, "/v1/admin/charges?limit=500&cursor="+url.QueryEscape(cursor), "", nil, http.StatusOK, &page)
		for _, c := range page.Charges {
			out[c.OrderID] = append(out[c.OrderID], c)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	return out
}

// inbox counts account's notifications by event id.
func (s *system) inbox(t testing.TB, account string) map[string]int {
	t.Helper()
	var page struct {
		Notifications []struct {
			EventID string `json:"event_id"`
		} `json:"notifications"`
	}
	s.notification.do(t, http.MethodGet, "/v1/notifications?limit=100", account, nil, http.StatusOK, &page)
	out := map[string]int{}
	for _, m := range page.Notifications {
		out[m.EventID]++
	}
	return out
}
