package order

import (
	"testing"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

var t0 = time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC)

func TestCanMove(t *testing.T) {
	tests := []struct {
		from, to State
		want     bool
	}{
		{Pending, Charging, true},
		{Charging, Charged, true},
		{Charging, Releasing, true},
		{Charged, Confirming, true},
		{Confirming, Confirmed, true},
		{Confirming, Refunding, true},
		{Releasing, Failed, true},
		{Refunding, Failed, true},
		{Pending, Confirmed, false},
		{Charging, Confirmed, false},
		{Charged, Releasing, false}, // money taken: only refunding may undo it
		{Confirmed, Failed, false},
		{Failed, Charging, false},
		{Confirming, Releasing, false}, // the hold may be sold already
	}
	for _, tt := range tests {
		if got := CanMove(tt.from, tt.to); got != tt.want {
			t.Errorf("CanMove(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestOrderMove(t *testing.T) {
	o := Order{ID: "ord_1", State: Charging}
	got, err := o.Move(Releasing, "payment declined", t0)
	if err != nil || got.State != Releasing || got.FailureReason != "payment declined" || !got.UpdatedAt.Equal(t0) {
		t.Errorf("Move(releasing) = %+v, %v; want releasing with the reason at t0", got, err)
	}
	if got, err := got.Move(Failed, "", t0); err != nil || got.FailureReason != "payment declined" {
		t.Errorf("Move(failed, no reason) = %+v, %v; want the earlier reason kept", got, err)
	}
	if _, err := o.Move(Confirmed, "", t0); err == nil {
		t.Error("Move(charging → confirmed) = nil error, want a refusal")
	}
}

func TestStateFinal(t *testing.T) {
	for _, s := range []State{Pending, Charging, Charged, Confirming, Releasing, Refunding, Confirmed, Failed} {
		want := s == Confirmed || s == Failed
		if got := s.Final(); got != want {
			t.Errorf("%s.Final() = %v, want %v", s, got, want)
		}
	}
}

func TestHoldCheckOrderable(t *testing.T) {
	active := Hold{ID: "h1", Account: "acc_1", Status: HoldActive, ExpiresAt: t0.Add(time.Minute), Tickets: []Tickets{{"cat-1", 2}}}
	tests := []struct {
		name    string
		change  func(h *Hold)
		account string
		want    problem.Code // "" = orderable
	}{
		{"own active hold", func(*Hold) {}, "acc_1", ""},
		{"another fan's hold", func(*Hold) {}, "acc_2", problem.Unprocessable},
		{"confirmed", func(h *Hold) { h.Status = HoldConfirmed }, "acc_1", problem.Conflict},
		{"released", func(h *Hold) { h.Status = HoldReleased }, "acc_1", problem.Gone},
		{"expired status", func(h *Hold) { h.Status = HoldExpired }, "acc_1", problem.Gone},
		{"past its expiry", func(h *Hold) { h.ExpiresAt = t0 }, "acc_1", problem.Gone},
		{"no tickets", func(h *Hold) { h.Tickets = nil }, "acc_1", problem.Unprocessable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := active
			tt.change(&h)
			err := h.CheckOrderable(tt.account, t0)
			if got := codeOrEmpty(err); got != tt.want {
				t.Errorf("CheckOrderable(%s) = %v, want code %q", tt.account, err, tt.want)
			}
		})
	}
}

func codeOrEmpty(err error) problem.Code {
	if err == nil {
		return ""
	}
	return problem.CodeOf(err)
}

func TestPrice(t *testing.T) {
	prices := map[string]money.Money{"cat-1": {Currency: "BRL", Minor: 12000}, "cat-2": {Currency: "BRL", Minor: 8050}, "eur": {Currency: "EUR", Minor: 1000}, "free": {Currency: "BRL", Minor: 0}, "bad": {Currency: "BRL", Minor: -100}}
	tests := []struct {
		name    string
		tickets []Tickets
		want    money.Money
		wantErr bool
	}{
		{"one class", []Tickets{{"cat-1", 2}}, money.Money{Currency: "BRL", Minor: 24000}, false},
		{"two classes", []Tickets{{"cat-1", 1}, {"cat-2", 3}}, money.Money{Currency: "BRL", Minor: 36150}, false},
		{"unpriced class", []Tickets{{"vip", 1}}, money.Money{}, true},
		{"mixed currencies", []Tickets{{"cat-1", 1}, {"eur", 1}}, money.Money{}, true},
		{"zero quantity", []Tickets{{"cat-1", 0}}, money.Money{}, true},
		{"no tickets", nil, money.Money{}, true},
		{"free class only: a free order", []Tickets{{"free", 2}}, money.Money{Currency: "BRL", Minor: 0}, false},
		{"free and paid classes", []Tickets{{"free", 2}, {"cat-1", 1}}, money.Money{Currency: "BRL", Minor: 12000}, false},
		{"negative price", []Tickets{{"bad", 1}}, money.Money{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, got, err := Price(Hold{ID: "h1", EventID: "evt-1", Tickets: tt.tickets}, prices)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("Price(%v) = %v, %v; want %v, error %v", tt.tickets, got, err, tt.want, tt.wantErr)
			}
			if err == nil && len(lines) != len(tt.tickets) {
				t.Errorf("Price(%v) lines = %v, want one per class", tt.tickets, lines)
			}
			if err != nil && problem.CodeOf(err) != problem.Unprocessable {
				t.Errorf("Price(%v) error = %v, want unprocessable", tt.tickets, err)
			}
		})
	}
}

func TestCreateRequestValidate(t *testing.T) {
	valid := CreateRequest{Account: "acc_1", IdempotencyKey: "k-1", HoldID: "hold_1"}
	tests := []struct {
		name   string
		change func(r *CreateRequest)
		code   problem.Code
		field  string
	}{
		{"valid", func(*CreateRequest) {}, "", ""},
		{"anonymous", func(r *CreateRequest) { r.Account = "" }, problem.Unauthorized, ""},
		{"no key", func(r *CreateRequest) { r.IdempotencyKey = "" }, problem.Invalid, IdempotencyKeyHeader},
		{"long key", func(r *CreateRequest) { r.IdempotencyKey = string(make([]byte, MaxKeyLen+1)) }, problem.Invalid, IdempotencyKeyHeader},
		{"no hold", func(r *CreateRequest) { r.HoldID = "" }, problem.Invalid, "hold_id"},
		{"hold with spaces", func(r *CreateRequest) { r.HoldID = "a b" }, problem.Invalid, "hold_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valid
			tt.change(&r)
			err := r.Validate()
			p, _ := err.(*problem.Error)
			if codeOrEmpty(err) != tt.code || (p != nil && p.Field != tt.field) {
				t.Errorf("Validate() = %v, want code %q naming %q", err, tt.code, tt.field)
			}
		})
	}
}

func TestCreateRequestHash(t *testing.T) {
	a := CreateRequest{Account: "acc_1", IdempotencyKey: "k1", HoldID: "h1"}
	b := a
	b.IdempotencyKey = "k2"
	c := a
	c.HoldID = "h2"
	if a.Hash() != b.Hash() {
		t.Errorf("Hash differs with the key alone; want it to fingerprint the request body")
	}
	if a.Hash() == c.Hash() {
		t.Errorf("Hash(h1) = Hash(h2), want different requests to differ")
	}
}
