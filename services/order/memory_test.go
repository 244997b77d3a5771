package order

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

// memHolds is an in-memory inventory with inventory's rules: a hold is confirmed or released
// once (again is a no-op), a confirmed hold cannot be released (Conflict), a released or
// expired one cannot be confirmed (Gone). It counts what happened to each hold.
type memHolds struct {
	mu        sync.Mutex
	now       func() time.Time
	holds     map[string]*Hold
	confirmed map[string]int // successful confirmations that changed the hold
	released  map[string]int
	fail      func(op, id string) error // injected failure before the operation; nil = none
}

var _ Holds = (*memHolds)(nil)

func newMemHolds(now func() time.Time) *memHolds {
	return &memHolds{now: now, holds: map[string]*Hold{}, confirmed: map[string]int{}, released: map[string]int{}}
}

func (m *memHolds) add(h Hold) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds[h.ID] = &h
}

func (m *memHolds) get(id string) (*Hold, error) {
	h, ok := m.holds[id]
	if !ok {
		return nil, problem.New(problem.NotFound, "no hold %s", id)
	}
	if h.Status == HoldActive && !m.now().Before(h.ExpiresAt) {
		h.Status = HoldExpired
	}
	return h, nil
}

func (m *memHolds) injected(op, id string) error {
	if m.fail == nil {
		return nil
	}
	return m.fail(op, id)
}

func (m *memHolds) GetHold(_ context.Context, id string) (Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.injected("get", id); err != nil {
		return Hold{}, err
	}
	h, err := m.get(id)
	if err != nil {
		return Hold{}, err
	}
	return *h, nil
}

func (m *memHolds) ConfirmHold(_ context.Context, id string) (Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.injected("confirm", id); err != nil {
		return Hold{}, err
	}
	h, err := m.get(id)
	if err != nil {
		return Hold{}, err
	}
	switch h.Status {
	case HoldReleased, HoldExpired:
		return Hold{}, problem.New(problem.Gone, "hold %s is %s", id, h.Status)
	case HoldActive:
		h.Status = HoldConfirmed
		m.confirmed[id]++
	}
	return *h, nil
}

func (m *memHolds) ReleaseHold(_ context.Context, id string) (Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.injected("release", id); err != nil {
		return Hold{}, err
	}
	h, err := m.get(id)
	if err != nil {
		return Hold{}, err
	}
	switch h.Status {
	case HoldConfirmed:
		return Hold{}, problem.New(problem.Conflict, "hold %s is confirmed", id)
	case HoldActive:
		h.Status = HoldReleased
		m.released[id]++
	}
	return *h, nil
}

// memPayments is an in-memory payment provider with payment's rules: one charge per key,
// amounts ending in 13 declined, Refund voids a key never charged.
type memPayments struct {
	mu      sync.Mutex
	charges map[string]Charge
	// fail injects a failure into op ("charge", "get", "refund") for key; landed says the
	// charge was made before the failure (an answer lost on the way back).
	fail func(op, key string) (landed bool, err error)
}

var _ Payments = (*memPayments)(nil)

func newMemPayments() *memPayments { return &memPayments{charges: map[string]Charge{}} }

func (m *memPayments) Charge(_ context.Context, key string, o Order) (Charge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	landed, err := false, error(nil)
	if m.fail != nil {
		landed, err = m.fail("charge", key)
	}
	if err != nil && !landed {
		return Charge{}, err
	}
	c, ok := m.charges[key]
	if !ok {
		c = Charge{ID: fmt.Sprintf("ch_%d", len(m.charges)+1), Status: ChargeSucceeded}
		if o.Amount.Minor%100 == 13 {
			c.Status, c.DeclineReason = ChargeDeclined, "card declined"
		}
		m.charges[key] = c
	}
	return c, err
}

func (m *memPayments) GetCharge(_ context.Context, key string) (Charge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		if _, err := m.fail("get", key); err != nil {
			return Charge{}, err
		}
	}
	c, ok := m.charges[key]
	if !ok {
		return Charge{}, problem.New(problem.NotFound, "no charge %s", key)
	}
	return c, nil
}

func (m *memPayments) Refund(_ context.Context, key string, _ Order, _ string) (Charge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		if _, err := m.fail("refund", key); err != nil {
			return Charge{}, err
		}
	}
	c, ok := m.charges[key]
	switch {
	case !ok:
		c = Charge{ID: fmt.Sprintf("ch_%d", len(m.charges)+1), Status: ChargeVoided}
	case c.Status == ChargeSucceeded:
		c.Status = ChargeRefunded
	}
	m.charges[key] = c
	return c, nil
}

func (m *memPayments) status(key string) ChargeStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.charges[key].Status
}

// The saga tests trust these fakes to follow inventory's and payment's rules; this pins the
// rules the fakes claim, so a fake that drifts fails here rather than passing a saga test
// for the wrong reason.
func TestMemHoldsFollowInventoryRules(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	m := newMemHolds(func() time.Time { return now })
	for _, id := range []string{"h-confirm", "h-release", "h-expired"} {
		m.add(Hold{ID: id, Status: HoldActive, ExpiresAt: now.Add(time.Minute)})
	}
	m.add(Hold{ID: "h-late", Status: HoldActive, ExpiresAt: now})

	steps := []struct {
		name string
		call func() (Hold, error)
		want HoldStatus
		code problem.Code // "" means no error
	}{
		{"confirm an active hold", func() (Hold, error) { return m.ConfirmHold(ctx, "h-confirm") }, HoldConfirmed, ""},
		{"confirm it again: no-op", func() (Hold, error) { return m.ConfirmHold(ctx, "h-confirm") }, HoldConfirmed, ""},
		{"release a confirmed hold", func() (Hold, error) { return m.ReleaseHold(ctx, "h-confirm") }, "", problem.Conflict},
		{"release an active hold", func() (Hold, error) { return m.ReleaseHold(ctx, "h-release") }, HoldReleased, ""},
		{"release it again: no-op", func() (Hold, error) { return m.ReleaseHold(ctx, "h-release") }, HoldReleased, ""},
		{"confirm a released hold", func() (Hold, error) { return m.ConfirmHold(ctx, "h-release") }, "", problem.Gone},
		{"read a hold past its expiry", func() (Hold, error) { return m.GetHold(ctx, "h-late") }, HoldExpired, ""},
		{"confirm a hold past its expiry", func() (Hold, error) { return m.ConfirmHold(ctx, "h-late") }, "", problem.Gone},
		{"read a missing hold", func() (Hold, error) { return m.GetHold(ctx, "h-none") }, "", problem.NotFound},
	}
	for _, s := range steps {
		h, err := s.call()
		var got problem.Code
		if err != nil {
			got = problem.CodeOf(err)
		}
		if got != s.code || s.code == "" && h.Status != s.want {
			t.Errorf("%s = %q, %v; want status %q, error code %q", s.name, h.Status, err, s.want, s.code)
		}
	}
	if m.confirmed["h-confirm"] != 1 || m.released["h-release"] != 1 {
		t.Errorf("confirmed, released = %v, %v; want each hold changed once", m.confirmed, m.released)
	}
}

func TestMemPaymentsFollowPaymentRules(t *testing.T) {
	ctx := context.Background()
	m := newMemPayments()
	order := func(minor int64) Order { return Order{Amount: money.Money{Currency: "EUR", Minor: minor}} }

	first, err := m.Charge(ctx, "k1", order(5000))
	if err != nil || first.Status != ChargeSucceeded {
		t.Fatalf("Charge(k1) = %+v, %v; want succeeded", first, err)
	}
	if again, err := m.Charge(ctx, "k1", order(5000)); err != nil || again != first {
		t.Errorf("Charge(k1) again = %+v, %v; want the first charge %+v", again, err, first)
	}
	if c, err := m.Charge(ctx, "k2", order(4913)); err != nil || c.Status != ChargeDeclined {
		t.Errorf("Charge of an amount ending in 13 = %+v, %v; want declined", c, err)
	}
	if c, err := m.Refund(ctx, "k1", order(5000), "test"); err != nil || c.Status != ChargeRefunded {
		t.Errorf("Refund(k1) = %+v, %v; want refunded", c, err)
	}
	if c, err := m.Refund(ctx, "k3", order(5000), "test"); err != nil || c.Status != ChargeVoided {
		t.Errorf("Refund of a key never charged = %+v, %v; want voided", c, err)
	}
	if c, err := m.Charge(ctx, "k3", order(5000)); err != nil || c.Status != ChargeVoided {
		t.Errorf("Charge after the key was voided = %+v, %v; want still voided", c, err)
	}
	if _, err := m.GetCharge(ctx, "k4"); problem.CodeOf(err) != problem.NotFound {
		t.Errorf("GetCharge of an unknown key = %v, want NotFound", err)
	}
}
