package order

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// sagaFixture is a saga over a real store and in-memory inventory and payment.
type sagaFixture struct {
	store    *Store
	holds    *memHolds
	payments *memPayments
	saga     *Saga
}

func newSagaFixture(t *testing.T, db *sqldb.DB) *sagaFixture {
	t.Helper()
	store := newTestStore(t, db)
	f := &sagaFixture{store: store, holds: newMemHolds(store.Clock.Now), payments: newMemPayments()}
	f.saga = &Saga{Store: store, Holds: f.holds, Payments: f.payments, MaxAttempts: 2, Retries: 5,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	f.saga.init()
	return f
}

// order stores a pending order for a new active hold, expiring at expires, of amount minor.
func (f *sagaFixture) order(t *testing.T, holdID string, minor int64, expires time.Time) Order {
	t.Helper()
	h := Hold{ID: holdID, EventID: "evt-1", Account: "acc_1", Status: HoldActive, ExpiresAt: expires, Tickets: []Tickets{{"cat-1", 1}}}
	f.holds.add(h)
	lines, total, err := Price(h, map[string]money.Money{"cat-1": {Currency: "BRL", Minor: minor}})
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := f.store.Create(context.Background(), CreateRequest{Account: "acc_1", IdempotencyKey: holdID, HoldID: holdID},
		f.store.NewOrder("acc_1", h, lines, total))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func unavailable(string) error { return problem.New(problem.Unavailable, "injected") }

func TestSagaOutcomes(t *testing.T) {
	later := t0.Add(time.Hour)
	tests := []struct {
		name        string
		minor       int64
		expires     time.Time
		setup       func(f *sagaFixture)
		wantState   State
		wantReason  string
		wantHold    HoldStatus
		wantPayment ChargeStatus
	}{
		{name: "paid and confirmed", minor: 10000, expires: later,
			wantState: Confirmed, wantHold: HoldConfirmed, wantPayment: ChargeSucceeded},
		{name: "declined: seats released", minor: 10013, expires: later,
			wantState: Failed, wantReason: ReasonDeclined + ": card declined", wantHold: HoldReleased, wantPayment: ChargeDeclined},
		{name: "answer lost after the charge landed: settled by GetCharge", minor: 10000, expires: later,
			setup: func(f *sagaFixture) {
				var n atomic.Int32
				f.payments.fail = func(op, _ string) (bool, error) {
					if op == "charge" && n.Add(1) == 1 {
						return true, problem.New(problem.Unavailable, "timed out")
					}
					return false, nil
				}
			},
			wantState: Confirmed, wantHold: HoldConfirmed, wantPayment: ChargeSucceeded},
		{name: "payment never answers: key voided, seats released", minor: 10000, expires: later,
			setup: func(f *sagaFixture) {
				f.payments.fail = func(op, _ string) (bool, error) {
					if op == "charge" {
						return false, problem.New(problem.Unavailable, "timed out")
					}
					return false, nil
				}
			},
			wantState: Failed, wantReason: ReasonNoPayment, wantHold: HoldReleased, wantPayment: ChargeVoided},
		{name: "hold expired while paying: refunded", minor: 10000, expires: t0,
			wantState: Failed, wantReason: ReasonHoldGone, wantHold: HoldExpired, wantPayment: ChargeRefunded},
		{name: "inventory away during confirm, then back", minor: 10000, expires: later,
			setup: func(f *sagaFixture) {
				var n atomic.Int32
				f.holds.fail = func(op, _ string) error {
					if op != "release" && n.Add(1) <= 3 {
						return unavailable(op)
					}
					return nil
				}
			},
			wantState: Confirmed, wantHold: HoldConfirmed, wantPayment: ChargeSucceeded},
		{name: "free tickets: confirmed with no call to payment", minor: 0, expires: later,
			wantState: Confirmed, wantHold: HoldConfirmed, wantPayment: ""},
		{name: "free tickets, hold expired: failed with no call to payment", minor: 0, expires: t0,
			wantState: Failed, wantReason: ReasonHoldGone, wantHold: HoldExpired, wantPayment: ""},
		{name: "inventory away during release, then back", minor: 10013, expires: later,
			setup: func(f *sagaFixture) {
				var n atomic.Int32
				f.holds.fail = func(op, _ string) error {
					if op == "release" && n.Add(1) <= 2 {
						return unavailable(op)
					}
					return nil
				}
			},
			wantState: Failed, wantReason: ReasonDeclined + ": card declined", wantHold: HoldReleased, wantPayment: ChargeDeclined},
	}
	testkit.ForEachDB(t, "order", func(t *testing.T, db *sqldb.DB) {
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := newSagaFixture(t, db)
				if tt.setup != nil {
					tt.setup(f)
				}
				holdID := "hold-" + string(rune('a'+i)) + "-" + string(db.Dialect)
				o := f.order(t, holdID, tt.minor, tt.expires)
				f.saga.advance(context.Background(), o.ID)
				got, err := f.store.Get(context.Background(), o.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.State != tt.wantState || got.FailureReason != tt.wantReason {
					t.Errorf("order = %s %q, want %s %q", got.State, got.FailureReason, tt.wantState, tt.wantReason)
				}
				h, _ := f.holds.GetHold(context.Background(), holdID)
				if h.Status != tt.wantHold {
					t.Errorf("hold = %s, want %s", h.Status, tt.wantHold)
				}
				if c := f.payments.status(o.ChargeKey()); c != tt.wantPayment {
					t.Errorf("charge = %s, want %s", c, tt.wantPayment)
				}
				if f.holds.confirmed[holdID]+f.holds.released[holdID] > 1 {
					t.Errorf("hold %s confirmed %d and released %d times, want at most one of them once",
						holdID, f.holds.confirmed[holdID], f.holds.released[holdID])
				}
			})
		}
	})
}

// TestSagaResumesFromEveryState stores orders stopped in each non-final state, as a crashed
// instance leaves them, and checks that a fresh saga finishes each one.
func TestSagaResumesFromEveryState(t *testing.T) {
	paths := map[State][]State{
		Pending:    {},
		Charging:   {Charging},
		Charged:    {Charging, Charged},
		Confirming: {Charging, Charged, Confirming},
		Releasing:  {Charging, Releasing},
		Refunding:  {Charging, Charged, Confirming, Refunding},
	}
	want := map[State]State{Pending: Confirmed, Charging: Confirmed, Charged: Confirmed, Confirming: Confirmed,
		Releasing: Failed, Refunding: Failed}
	testkit.ForEachDB(t, "order", func(t *testing.T, db *sqldb.DB) {
		f := newSagaFixture(t, db)
		ctx := context.Background()
		for from, path := range paths {
			o := f.order(t, "hold-"+string(from), 10000, t0.Add(time.Hour))
			var err error
			for _, s := range path {
				if o, err = o.Move(s, "crashed here", f.store.Clock.Now().UTC()); err != nil {
					t.Fatal(err)
				}
				if s == Charged {
					o.ChargeID = "ch_before_crash"
				}
				if o, err = f.store.Save(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			f.saga.advance(ctx, o.ID)
			got, err := f.store.Get(ctx, o.ID)
			if err != nil || got.State != want[from] {
				t.Errorf("resumed from %s: order = %s, %v; want %s", from, got.State, err, want[from])
			}
		}
	})
}

// TestSagaRunRecoversStalledOrders leaves an order in charging, as an instance that died
// mid-payment would, and checks that the recovery loop of a running saga finishes it.
func TestSagaRunRecoversStalledOrders(t *testing.T) {
	db := testkit.OpenDBs(t, "order")[0]
	f := newSagaFixture(t, db)
	f.saga.StallAfter, f.saga.ScanEvery, f.saga.Sleep = time.Millisecond, 5*time.Millisecond, clock.Sleep
	ctx, cancel := context.WithCancel(context.Background())
	o := f.order(t, "hold-stalled", 10000, t0.Add(time.Hour))
	o, _ = o.Move(Charging, "", f.store.Clock.Now().UTC())
	if _, err := f.store.Save(ctx, o); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.saga.Run(ctx) }()
	testkit.Eventually(t, 10*time.Second, "the stalled order is confirmed", func() bool {
		got, err := f.store.Get(ctx, o.ID)
		return err == nil && got.State == Confirmed
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil after cancel", err)
	}
}

func TestSagaCountsOutcomes(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	f := newSagaFixture(t, testkit.OpenDBs(t, "order")[0])
	f.saga = &Saga{Store: f.store, Holds: f.holds, Payments: f.payments,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}
	f.saga.init()
	ctx := context.Background()
	for i, minor := range []int64{10000, 10000, 10013} {
		f.saga.advance(ctx, f.order(t, fmt.Sprint("hold-metric-", i), minor, t0.Add(time.Hour)).ID)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "order.saga.outcomes" {
				for _, dp := range sum.DataPoints {
					state, _ := dp.Attributes.Value("state")
					got[state.AsString()] += dp.Value
				}
			}
		}
	}
	if got["confirmed"] != 2 || got["failed"] != 1 {
		t.Errorf("order.saga.outcomes = %v, want confirmed 2, failed 1", got)
	}
}
