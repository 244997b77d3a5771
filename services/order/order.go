// Package order is BoxOffice's order: a fan turns a hold into an order with an
// Idempotency-Key, and a saga pays for it and confirms the seats, or gives them back.
//
// The saga is a sequence of persisted states, each written before the call it stands for,
// so an order interrupted anywhere (a crash, a timeout) is resumed from its last state by any
// instance:
//
//	pending → charging → charged → confirming → confirmed
//	             │                     │
//	             ▼                     ▼
//	         releasing ──► failed ◄── refunding
//
// charging takes the money (idempotent by the order's charge key); confirming turns the hold
// into sold seats (idempotent in inventory). A decline, or a payment whose outcome stays
// unknown, goes to releasing: the hold's seats return to sale. A hold that expired while the
// payment went through goes to refunding: the money returns to the fan. So a seat is never
// both sold and released, and no money is kept without a seat. An order of free tickets
// (a total of zero) passes charging and refunding without a call to payment: there is no
// money to take or to give back.
//
// This file holds the domain: orders, their states and the rules between them. It does no
// I/O; store.go persists, saga.go drives the states, http.go and grpc.go serve.
package order

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

// State is where an order is in its saga.
type State string

// The saga's states; see the package comment for the transitions.
const (
	Pending    State = "pending"    // created; nothing done yet
	Charging   State = "charging"   // taking the money; the outcome may be unknown
	Charged    State = "charged"    // the money is taken
	Confirming State = "confirming" // turning the hold into sold seats
	Confirmed  State = "confirmed"  // final: paid, seats sold
	Releasing  State = "releasing"  // not paid: giving the hold's seats back
	Refunding  State = "refunding"  // paid, but the hold is gone: giving the money back
	Failed     State = "failed"     // final: no money kept, no seat sold
)

// Final reports whether s ends the saga.
func (s State) Final() bool { return s == Confirmed || s == Failed }

// transitions lists where each state may go. A step writes its next state only from the
// state it read (compare-and-set), so two instances resuming one order cannot both move it.
var transitions = map[State][]State{
	Pending:    {Charging},
	Charging:   {Charged, Releasing},
	Charged:    {Confirming},
	Confirming: {Confirmed, Refunding},
	Releasing:  {Failed},
	Refunding:  {Failed},
}

// CanMove reports whether the saga may go from one state to another.
func CanMove(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Order is a fan's purchase of the tickets of one hold.
type Order struct {
	ID            string      `json:"id"`
	Account       string      `json:"account"`
	HoldID        string      `json:"hold_id"`
	EventID       string      `json:"event_id"`
	Lines         []Line      `json:"lines"`
	Amount        money.Money `json:"amount"`
	State         State       `json:"state"`
	FailureReason string      `json:"failure_reason,omitempty"`
	ChargeID      string      `json:"charge_id,omitempty"`
	Attempts      int         `json:"-"` // payment attempts whose outcome was unknown
	Version       int         `json:"-"` // bumped by every write; see Store.Save
	CreatedAt     time.Time   `json:"created_at"`
	UpdatedAt     time.Time   `json:"updated_at"`
}

// Line is one ticket class of an order: how many and at what price.
type Line struct {
	Class     string      `json:"class"`
	Quantity  int         `json:"quantity"`
	UnitPrice money.Money `json:"unit_price"`
}

// Move returns o in state to at now, with reason kept when the move is towards failure.
// It refuses a move the saga does not allow.
func (o Order) Move(to State, reason string, now time.Time) (Order, error) {
	if !CanMove(o.State, to) {
		return o, fmt.Errorf("order %s: no move from %s to %s", o.ID, o.State, to)
	}
	o.State, o.UpdatedAt = to, now
	if reason != "" {
		o.FailureReason = reason
	}
	return o, nil
}

// Free reports whether o has nothing to pay: its saga makes no call to payment.
func (o Order) Free() bool { return o.Amount.Minor == 0 }

// ChargeKey is the idempotency key of the order's payment: one per order, so however often
// the saga retries or resumes, the provider takes the money at most once.
func (o Order) ChargeKey() string { return "order:" + o.ID }

// HoldStatus is where a hold is, as inventory reports it.
type HoldStatus string

// The hold statuses. Only an active hold owns seats.
const (
	HoldActive    HoldStatus = "active"
	HoldConfirmed HoldStatus = "confirmed"
	HoldReleased  HoldStatus = "released"
	HoldExpired   HoldStatus = "expired"
)

// Hold is what order needs to know of an inventory hold.
type Hold struct {
	ID        string
	EventID   string
	Account   string
	Status    HoldStatus
	Tickets   []Tickets
	ExpiresAt time.Time
}

// Tickets is how many tickets of one class a hold has.
type Tickets struct {
	Class    string
	Quantity int
}

// ErrNoSuchHold answers an order for a hold that does not exist or is another fan's: the
// same answer for both, so hold ids reveal nothing about other fans.
var ErrNoSuchHold = &problem.Error{Code: problem.Unprocessable, Field: "hold_id", Message: "no such hold of yours"}

// CheckOrderable says whether account may order h at now: it must be the hold's owner and
// the hold must still own its seats.
func (h Hold) CheckOrderable(account string, now time.Time) error {
	switch {
	case h.Account != account:
		return ErrNoSuchHold
	case h.Status == HoldConfirmed:
		return problem.New(problem.Conflict, "hold %s is already sold", h.ID)
	case h.Status == HoldReleased, h.Status == HoldExpired, !now.Before(h.ExpiresAt):
		return problem.New(problem.Gone, "hold %s is no longer held", h.ID)
	case len(h.Tickets) == 0:
		return problem.New(problem.Unprocessable, "hold %s has no tickets", h.ID)
	}
	return nil
}

// Price builds the lines of an order for h from the event's prices by ticket class. Every
// class must have a price and all prices one currency. Free classes (a price of zero, which
// the catalog accepts) make a free order: its total may be zero.
func Price(h Hold, prices map[string]money.Money) (lines []Line, total money.Money, err error) {
	for _, t := range h.Tickets {
		p, ok := prices[t.Class]
		switch {
		case !ok:
			return nil, money.Money{}, problem.New(problem.Unprocessable, "ticket class %q of event %s has no price", t.Class, h.EventID)
		case p.Minor < 0:
			return nil, money.Money{}, problem.New(problem.Unprocessable, "ticket class %q of event %s has a negative price", t.Class, h.EventID)
		case t.Quantity < 1:
			return nil, money.Money{}, problem.New(problem.Unprocessable, "hold %s has %d tickets of class %q", h.ID, t.Quantity, t.Class)
		case total.Currency != "" && p.Currency != total.Currency:
			return nil, money.Money{}, problem.New(problem.Unprocessable, "event %s mixes currencies %s and %s", h.EventID, total.Currency, p.Currency)
		}
		total.Currency = p.Currency
		total.Minor += p.Minor * int64(t.Quantity)
		lines = append(lines, Line{Class: t.Class, Quantity: t.Quantity, UnitPrice: p})
	}
	if len(lines) == 0 {
		return nil, money.Money{}, problem.New(problem.Unprocessable, "hold %s has no tickets", h.ID)
	}
	return lines, total, nil
}

// CreateRequest is a fan's request to order a hold.
type CreateRequest struct {
	Account        string
	IdempotencyKey string
	HoldID         string
}

// IdempotencyKeyHeader is the HTTP header that carries CreateRequest.IdempotencyKey.
const IdempotencyKeyHeader = "Idempotency-Key"

// MaxKeyLen bounds idempotency keys and ids.
const MaxKeyLen = 200

var holdID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// Validate names the first missing or malformed part of r.
func (r CreateRequest) Validate() error {
	switch {
	case r.Account == "":
		return problem.New(problem.Unauthorized, "ordering needs a signed-in user")
	case r.IdempotencyKey == "" || len(r.IdempotencyKey) > MaxKeyLen:
		return problem.InvalidField(IdempotencyKeyHeader, "want 1 to %d characters, unique per order you mean to place", MaxKeyLen)
	case !holdID.MatchString(r.HoldID):
		return problem.InvalidField("hold_id", "want the id of one of your holds")
	}
	return nil
}

// Hash is the fingerprint of what r asks for, stored with its idempotency key: the same key
// with the same request replays the first answer, with another request it is refused.
func (r CreateRequest) Hash() string {
	sum := sha256.Sum256([]byte("hold_id=" + r.HoldID))
	return hex.EncodeToString(sum[:])
}
