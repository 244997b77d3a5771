// Package payment is BoxOffice's payment: a simulated payment provider that charges and
// refunds accounts, idempotent by key, with latency, failures and outages injected through
// the platform's control hook so the scenarios can make it misbehave.
//
// The provider keeps one row per idempotency key. That row is the whole guarantee against
// double charges: a retried or concurrent Charge with the same key finds it and returns it,
// and a key voided by a caller that gave up on a timed-out charge blocks the charge that was
// still in flight.
package payment

import (
	"fmt"
	"regexp"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

// Status is where a charge stands.
type Status string

// The statuses of a charge. Succeeded is the only one where the provider holds the money.
const (
	Succeeded Status = "succeeded" // money taken
	Declined  Status = "declined"  // refused by the provider; nothing taken
	Refunded  Status = "refunded"  // taken, then returned
	Voided    Status = "voided"    // the key was voided before a charge landed; nothing taken
)

// Charge is one attempt to take money, identified by the caller's idempotency key.
type Charge struct {
	ID             string      `json:"id"`
	IdempotencyKey string      `json:"idempotency_key"`
	OrderID        string      `json:"order_id"`
	Account        string      `json:"account"`
	Amount         money.Money `json:"amount"`
	Status         Status      `json:"status"`
	DeclineReason  string      `json:"decline_reason,omitempty"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
}

// ChargeRequest asks to take Amount from Account for OrderID, once per IdempotencyKey.
type ChargeRequest struct {
	IdempotencyKey string
	OrderID        string
	Account        string
	Amount         money.Money
}

// MaxKeyLen bounds idempotency keys and ids so a client cannot store arbitrary blobs.
const MaxKeyLen = 200

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

// Validate reports the first field of r that is missing or malformed, as an Invalid problem
// naming it.
func (r ChargeRequest) Validate() error {
	switch {
	case r.IdempotencyKey == "" || len(r.IdempotencyKey) > MaxKeyLen:
		return problem.InvalidField("idempotency_key", "want 1 to %d characters", MaxKeyLen)
	case r.OrderID == "" || len(r.OrderID) > MaxKeyLen:
		return problem.InvalidField("order_id", "want 1 to %d characters", MaxKeyLen)
	case r.Account == "" || len(r.Account) > MaxKeyLen:
		return problem.InvalidField("account", "want 1 to %d characters", MaxKeyLen)
	case !currency.MatchString(r.Amount.Currency):
		return problem.InvalidField("amount.currency", "want a three-letter ISO 4217 code such as BRL")
	case r.Amount.Minor <= 0:
		return problem.InvalidField("amount.minor", "want a positive amount in minor units")
	}
	return nil
}

// Matches reports whether c is what r asked for, so that reusing a key for another order,
// account or amount is refused rather than silently answered with someone else's charge.
func (r ChargeRequest) Matches(c Charge) bool {
	return r.OrderID == c.OrderID && r.Account == c.Account && r.Amount == c.Amount
}

// DeclineSuffix is the rule that makes declines reproducible: an amount whose minor units
// end in 13 (12513 = 125.13) is declined, like the magic card numbers of a real provider's
// sandbox. Tests and the playground pick amounts to get the outcome they want.
const DeclineSuffix = 13

// Decide is the provider's verdict on a valid request: Succeeded, or Declined with a reason.
func Decide(r ChargeRequest) (Status, string) {
	if r.Amount.Minor%100 == DeclineSuffix {
		return Declined, fmt.Sprintf("card declined (amounts ending in %d are declined)", DeclineSuffix)
	}
	return Succeeded, ""
}

// RefundRequest names a charge by ID or by IdempotencyKey, exactly one of them.
type RefundRequest struct {
	ChargeID       string
	IdempotencyKey string
	OrderID        string // recorded on a voided key
	Reason         string
}

// Validate checks that exactly one way of naming the charge is given.
func (r RefundRequest) Validate() error {
	switch {
	case r.ChargeID == "" && r.IdempotencyKey == "":
		return problem.InvalidField("charge_id", "want charge_id or idempotency_key")
	case r.ChargeID != "" && r.IdempotencyKey != "":
		return problem.InvalidField("idempotency_key", "want charge_id or idempotency_key, not both")
	case len(r.ChargeID) > MaxKeyLen:
		return problem.InvalidField("charge_id", "want at most %d characters", MaxKeyLen)
	case len(r.IdempotencyKey) > MaxKeyLen:
		return problem.InvalidField("idempotency_key", "want at most %d characters", MaxKeyLen)
	case len(r.OrderID) > MaxKeyLen:
		return problem.InvalidField("order_id", "want at most %d characters", MaxKeyLen)
	}
	return nil
}

// Refund returns c after a refund at time now. Refunding is idempotent: a charge that holds
// no money (declined, voided, already refunded) is returned unchanged, so a caller retrying a
// compensation after a lost answer never gets an error for a refund that already happened.
func (c Charge) Refund(now time.Time) Charge {
	if c.Status != Succeeded {
		return c
	}
	c.Status = Refunded
	c.UpdatedAt = now
	return c
}
