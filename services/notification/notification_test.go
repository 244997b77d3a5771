package notification

import (
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/problem"
)

const confirmedPayload = `{"id":"ord_1.confirmed","type":"order.confirmed","occurred_at":"2030-05-01T10:00:00Z",
 "order":{"id":"ord_1","account":"acc_1","hold_id":"h1","event_id":"evt-007","state":"confirmed",
  "amount":{"currency":"BRL","minor":25100},"lines":[{"class":"cat-1","quantity":2,"unit_price":{"currency":"BRL","minor":12550}}]}}`

func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		payload  string
		wantOK   bool
		wantCode problem.Code // "" = no error
		account  string
		kind     Kind
		contains []string // in subject, body or push
	}{
		{name: "order confirmed", payload: confirmedPayload, wantOK: true, account: "acc_1", kind: OrderConfirmed,
			contains: []string{"ord_1", "evt-007", "BRL 251.00", "2 × cat-1", "Confirmed: 2 tickets"}},
		{name: "order failed", wantOK: true, account: "acc_2", kind: OrderFailed,
			payload:  `{"id":"ord_2.failed","type":"order.failed","order":{"id":"ord_2","account":"acc_2","event_id":"evt-1","failure_reason":"payment declined"}}`,
			contains: []string{"ord_2", "could not be completed: payment declined"}},
		{name: "hold expired", wantOK: true, account: "acc_3", kind: HoldExpired,
			payload:  `{"id":"h9@expired","type":"inventory.hold.expired","hold":{"id":"h9","event_id":"evt-2","account":"acc_3","quantity":3,"expires_at":"2030-05-01T10:05:00Z"}}`,
			contains: []string{"h9", "3 ticket(s)", "10:05 UTC", "evt-2"}},
		{name: "order created makes no message", wantOK: false,
			payload: `{"id":"ord_1.created","type":"order.created","order":{"id":"ord_1","account":"acc_1"}}`},
		{name: "hold placed makes no message", wantOK: false,
			payload: `{"id":"h1@placed","type":"inventory.hold.placed","hold":{"id":"h1","account":"acc_1"}}`},
		{name: "confirmed without an account", wantCode: problem.Invalid,
			payload: `{"id":"ord_1.confirmed","type":"order.confirmed","order":{"id":"ord_1"}}`},
		{name: "not json", wantCode: problem.Invalid, payload: `{"id":`},
		{name: "no id", wantCode: problem.Invalid, payload: `{"type":"order.confirmed"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode([]byte(tt.payload))
			var m Message
			ok := false
			if err == nil {
				m, ok, err = Render(ev)
			}
			if tt.wantCode != "" {
				if problem.CodeOf(err) != tt.wantCode {
					t.Fatalf("Render = %v, want code %s", err, tt.wantCode)
				}
				return
			}
			if err != nil || ok != tt.wantOK {
				t.Fatalf("Render = ok %v, %v; want ok %v", ok, err, tt.wantOK)
			}
			if !ok {
				return
			}
			if m.Account != tt.account || m.Kind != tt.kind || m.EventID != ev.ID {
				t.Errorf("Render = account %q kind %q event %q, want %q %q %q", m.Account, m.Kind, m.EventID, tt.account, tt.kind, ev.ID)
			}
			all := m.Subject + "\n" + m.Body + "\n" + m.Push
			for _, s := range tt.contains {
				if !strings.Contains(all, s) {
					t.Errorf("message does not contain %q:\n%s", s, all)
				}
			}
			if strings.Contains(all, "<no value>") || strings.Contains(m.Push, "\n") {
				t.Errorf("message has a missing value or a multi-line push:\n%s", all)
			}
		})
	}
}

func TestDecodeKeepsTheEnvelope(t *testing.T) {
	ev, err := Decode([]byte(confirmedPayload))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC); ev.ID != "ord_1.confirmed" || !ev.OccurredAt.Equal(want) || ev.Order.Amount.Minor != 25100 {
		t.Errorf("Decode = %+v, want id ord_1.confirmed at %v for 25100", ev, want)
	}
}
