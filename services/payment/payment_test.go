package payment

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

func validCharge() ChargeRequest {
	return ChargeRequest{IdempotencyKey: "k1", OrderID: "ord_1", Account: "acc_1", Amount: money.Money{Currency: "BRL", Minor: 12550}}
}

func TestChargeRequestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *ChargeRequest)
		field  string // "" = valid
	}{
		{"valid", func(*ChargeRequest) {}, ""},
		{"no key", func(r *ChargeRequest) { r.IdempotencyKey = "" }, "idempotency_key"},
		{"long key", func(r *ChargeRequest) { r.IdempotencyKey = string(make([]byte, MaxKeyLen+1)) }, "idempotency_key"},
		{"no order", func(r *ChargeRequest) { r.OrderID = "" }, "order_id"},
		{"no account", func(r *ChargeRequest) { r.Account = "" }, "account"},
		{"lower-case currency", func(r *ChargeRequest) { r.Amount.Currency = "brl" }, "amount.currency"},
		{"no currency", func(r *ChargeRequest) { r.Amount.Currency = "" }, "amount.currency"},
		{"zero amount", func(r *ChargeRequest) { r.Amount.Minor = 0 }, "amount.minor"},
		{"negative amount", func(r *ChargeRequest) { r.Amount.Minor = -5 }, "amount.minor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validCharge()
			tt.change(&r)
			assertField(t, r.Validate(), tt.field)
		})
	}
}

func TestRefundRequestValidate(t *testing.T) {
	tests := []struct {
		name  string
		req   RefundRequest
		field string
	}{
		{"by id", RefundRequest{ChargeID: "ch_1"}, ""},
		{"by key", RefundRequest{IdempotencyKey: "k"}, ""},
		{"neither", RefundRequest{}, "charge_id"},
		{"both", RefundRequest{ChargeID: "ch_1", IdempotencyKey: "k"}, "idempotency_key"},
		{"longest id", RefundRequest{ChargeID: long(MaxKeyLen)}, ""},
		{"long id", RefundRequest{ChargeID: long(MaxKeyLen + 1)}, "charge_id"},
		{"longest key", RefundRequest{IdempotencyKey: long(MaxKeyLen)}, ""},
		{"long key", RefundRequest{IdempotencyKey: long(MaxKeyLen + 1)}, "idempotency_key"},
		{"longest order", RefundRequest{ChargeID: "ch_1", OrderID: long(MaxKeyLen)}, ""},
		{"long order", RefundRequest{ChargeID: "ch_1", OrderID: long(MaxKeyLen + 1)}, "order_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertField(t, tt.req.Validate(), tt.field) })
	}
}

// long returns an n-byte key, the unit MaxKeyLen counts in.
func long(n int) string { return strings.Repeat("k", n) }

func assertField(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("Validate() = %v, want nil", err)
		}
		return
	}
	p, ok := err.(*problem.Error)
	if !ok || p.Code != problem.Invalid || p.Field != field {
		t.Fatalf("Validate() = %v, want an invalid problem naming %q", err, field)
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		minor int64
		want  Status
	}{
		{12550, Succeeded},
		{12513, Declined},
		{13, Declined},
		{113, Declined},
		{1300, Succeeded},
		{12514, Succeeded},
	}
	for _, tt := range tests {
		r := validCharge()
		r.Amount.Minor = tt.minor
		if got, reason := Decide(r); got != tt.want || (got == Declined) != (reason != "") {
			t.Errorf("Decide(minor %d) = %s %q, want %s with a reason only when declined", tt.minor, got, reason, tt.want)
		}
	}
}

func TestChargeRefund(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		from, want Status
	}{
		{Succeeded, Refunded},
		{Refunded, Refunded},
		{Declined, Declined},
		{Voided, Voided},
	}
	for _, tt := range tests {
		t.Run(string(tt.from), func(t *testing.T) {
			got := Charge{Status: tt.from}.Refund(now)
			if got.Status != tt.want {
				t.Errorf("Refund(%s) = %s, want %s", tt.from, got.Status, tt.want)
			}
			if changed := got.UpdatedAt.Equal(now); changed != (tt.from != tt.want) {
				t.Errorf("Refund(%s) updated_at = %v, want it set only on a change", tt.from, got.UpdatedAt)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	c := Charge{OrderID: "ord_1", Account: "acc_1", Amount: money.Money{Currency: "BRL", Minor: 12550}}
	tests := []struct {
		name   string
		change func(r *ChargeRequest)
		want   bool
	}{
		{"same", func(*ChargeRequest) {}, true},
		{"other order", func(r *ChargeRequest) { r.OrderID = "ord_2" }, false},
		{"other account", func(r *ChargeRequest) { r.Account = "acc_2" }, false},
		{"other amount", func(r *ChargeRequest) { r.Amount.Minor++ }, false},
		{"other currency", func(r *ChargeRequest) { r.Amount.Currency = "EUR" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validCharge()
			tt.change(&r)
			if got := r.Matches(c); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLateAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	late := NewLateAnswers(1, time.Hour, 1)
	if err := late.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait(rate 1, an hour) = %v, want the caller's deadline", err)
	}
	var never *LateAnswers
	if err := never.Wait(context.Background()); err != nil {
		t.Errorf("nil Wait = %v, want nil", err)
	}
}
