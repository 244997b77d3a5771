package order

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/problem"
)

// Holds is what the saga needs from inventory. Confirming is idempotent (a confirmed hold
// confirms again) and fails with Gone once the hold is released or expired; releasing is
// idempotent and fails with Conflict on a confirmed hold.
type Holds interface {
	GetHold(ctx context.Context, id string) (Hold, error)
	ConfirmHold(ctx context.Context, id string) (Hold, error)
	ReleaseHold(ctx context.Context, id string) (Hold, error)
}

// Payments is what the saga needs from payment. Charge is idempotent by key. Refund returns
// the money of the key's charge, and voids a key that was never charged so that a charge
// still in flight for it lands as voided and takes nothing.
type Payments interface {
	Charge(ctx context.Context, key string, o Order) (Charge, error)
	GetCharge(ctx context.Context, key string) (Charge, error)
	Refund(ctx context.Context, key string, o Order, reason string) (Charge, error)
}

// Charge is what the saga needs to know of a payment.
type Charge struct {
	ID            string
	Status        ChargeStatus
	DeclineReason string
}

// ChargeStatus is where a payment stands. Only ChargeSucceeded keeps money.
type ChargeStatus string

// The payment statuses.
const (
	ChargeSucceeded ChargeStatus = "succeeded"
	ChargeDeclined  ChargeStatus = "declined"
	ChargeRefunded  ChargeStatus = "refunded"
	ChargeVoided    ChargeStatus = "voided"
)

// Failure reasons an order ends with.
const (
	ReasonDeclined    = "payment declined"
	ReasonNoPayment   = "payment did not go through"
	ReasonHoldGone    = "the hold expired before the payment completed; the payment was refunded"
	ReasonHoldSoldOut = "the hold could not be confirmed"
)

// errRetry is a step that could not finish now (a service unreachable, an outcome unknown)
// and should be tried again later from the same state.
var errRetry = errors.New("step will be retried")

// Saga drives orders through their states (see the package comment). Set the fields, then
// call Run once; Start may be called from any goroutine. Any number of Sagas, in any number
// of instances, may drive one database's orders: each step is written compare-and-set, and
// every call it makes is idempotent, so a step done twice has the effect of one.
type Saga struct {
	Store    *Store
	Holds    Holds
	Payments Payments
	// Log receives step failures; nil discards them.
	Log *slog.Logger
	// CallTimeout bounds each call to inventory (and catalog, when placing); 0 means 2s.
	CallTimeout time.Duration
	// PaymentTimeout bounds each call to payment; 0 means CallTimeout. A charge that takes
	// longer has an unknown outcome, settled by GetCharge before anything else is decided.
	PaymentTimeout time.Duration
	// MaxAttempts is how many charges with an unknown outcome an order gets before its key is
	// voided and its hold released; 0 means 3.
	MaxAttempts int
	// Retries is how many times a worker retries a step that failed for now before leaving
	// the order to the recovery loop; 0 means 3. Backoff is the first pause, doubled each
	// time; 0 means 50ms.
	Retries int
	Backoff time.Duration
	// StallAfter is how long a non-final order may go unwritten before the recovery loop
	// resumes it (its instance died, or its retries ran out); 0 means 30s. ScanEvery is how
	// often the loop looks; 0 means StallAfter/4.
	StallAfter time.Duration
	ScanEvery  time.Duration
	// Workers is how many orders advance at once; 0 means 8.
	Workers int
	// Sleep waits d or until ctx ends; nil means a timer. Tests may shorten waits with it.
	Sleep func(ctx context.Context, d time.Duration) error
	// MeterProvider receives the saga's counters (outcomes by state, steps left to retry);
	// nil means none.
	MeterProvider metric.MeterProvider

	once     sync.Once
	queue    chan string
	inflight sync.Map // order id → struct{}: one worker per order in this instance
	outcomes metric.Int64Counter
	retries  metric.Int64Counter
}

func (s *Saga) init() {
	s.once.Do(func() {
		s.queue = make(chan string, 4096)
		if s.Log == nil {
			s.Log = logging.Discard()
		}
		if s.Sleep == nil {
			s.Sleep = clock.Sleep
		}
		mp := s.MeterProvider
		if mp == nil {
			mp = noop.NewMeterProvider()
		}
		meter := mp.Meter("boxoffice.dev/services/order")
		// Instrument creation fails only on an invalid name; a no-op counter is returned then.
		s.outcomes, _ = meter.Int64Counter("order.saga.outcomes", metric.WithDescription("Orders that reached a final state, by state."))
		s.retries, _ = meter.Int64Counter("order.saga.retries", metric.WithDescription("Saga steps that failed for now and were retried, by state."))
	})
}

// Start asks for order id to be advanced soon. It never blocks: when the queue is full the
// order waits for the recovery loop instead.
func (s *Saga) Start(id string) {
	s.init()
	select {
	case s.queue <- id:
	default:
		s.Log.Warn("saga queue full; the recovery loop will resume the order", "order", id)
	}
}

// Run advances started orders and resumes stalled ones until ctx ends, then returns nil
// once its workers have stopped.
func (s *Saga) Run(ctx context.Context) error {
	s.init()
	var wg sync.WaitGroup
	for range cmp.Or(s.Workers, 8) {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case id := <-s.queue:
					s.advance(ctx, id)
				}
			}
		})
	}
	wg.Go(func() { s.recover(ctx) })
	wg.Wait()
	return nil
}

// recover periodically claims orders that stopped short of a final state and queues them.
// Claiming rewrites the order's version, so of several instances scanning at once only one
// resumes each order.
func (s *Saga) recover(ctx context.Context) {
	stall := cmp.Or(s.StallAfter, 30*time.Second)
	every := cmp.Or(s.ScanEvery, stall/4)
	for s.Sleep(ctx, every) == nil {
		stalled, err := s.Store.Stalled(ctx, s.Store.Clock.Now().UTC().Add(-stall), 100)
		if err != nil {
			s.Log.WarnContext(ctx, "saga recovery scan", "error", err)
			continue
		}
		for _, o := range stalled {
			if _, busy := s.inflight.Load(o.ID); busy {
				continue
			}
			o.UpdatedAt = s.Store.Clock.Now().UTC()
			if _, err := s.Store.Save(ctx, o); err != nil {
				continue // another instance claimed it, or the database is away: next scan
			}
			s.Start(o.ID)
		}
	}
}

// advance takes order id as far as it can go now: to a final state, or to a step that keeps
// failing for now (left to the recovery loop).
func (s *Saga) advance(ctx context.Context, id string) {
	if _, busy := s.inflight.LoadOrStore(id, struct{}{}); busy {
		return
	}
	defer s.inflight.Delete(id)
	o, err := s.Store.Get(ctx, id)
	if err != nil {
		s.Log.WarnContext(ctx, "saga: load order", "order", id, "error", err)
		return
	}
	retries, backoff := cmp.Or(s.Retries, 3), cmp.Or(s.Backoff, 50*time.Millisecond)
	for tries := 0; !o.State.Final(); {
		next, err := s.Step(ctx, o)
		switch {
		case err == nil:
			o = next
			continue
		case errors.Is(err, errStale):
			if o, err = s.Store.Get(ctx, id); err == nil {
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.retries.Add(ctx, 1, metric.WithAttributes(attribute.String("state", string(o.State))))
		if tries++; tries > retries {
			s.Log.WarnContext(ctx, "saga: step keeps failing; left to recovery", "order", id, "state", o.State, "error", err)
			return
		}
		if s.Sleep(ctx, backoff<<(tries-1)) != nil {
			return
		}
		if next, gerr := s.Store.Get(ctx, id); gerr == nil {
			o = next
		}
	}
}

// Step does the work of o's state and writes the state it leads to. It returns errRetry
// (wrapped) when the work could not be done for now, and errStale when another writer moved
// the order first.
func (s *Saga) Step(ctx context.Context, o Order) (Order, error) {
	switch o.State {
	case Pending:
		return s.move(ctx, o, Charging, "")
	case Charging:
		return s.charge(ctx, o)
	case Charged:
		return s.move(ctx, o, Confirming, "")
	case Confirming:
		return s.confirm(ctx, o)
	case Releasing:
		return s.release(ctx, o)
	case Refunding:
		return s.refund(ctx, o)
	}
	return o, nil
}

// charge takes the money. When the answer is lost (timeout, unavailable) the outcome is
// unknown: the provider may have charged. GetCharge settles it; a key never charged is
// tried again, up to MaxAttempts, then voided, so a charge still in flight cannot land
// after the seats went back to sale.
func (s *Saga) charge(ctx context.Context, o Order) (Order, error) {
	if o.Free() {
		return s.move(ctx, o, Charged, "")
	}
	key := o.ChargeKey()
	c, err := call(ctx, s.paymentTimeout(), func(ctx context.Context) (Charge, error) { return s.Payments.Charge(ctx, key, o) })
	if err != nil && !permanent(err) {
		c, err = call(ctx, s.paymentTimeout(), func(ctx context.Context) (Charge, error) { return s.Payments.GetCharge(ctx, key) })
		if problem.CodeOf(err) == problem.NotFound {
			if o.Attempts++; o.Attempts < cmp.Or(s.MaxAttempts, 3) {
				if _, serr := s.save(ctx, o); serr != nil {
					return o, serr
				}
				return o, fmt.Errorf("charge %s: outcome unknown, nothing charged yet: %w", key, errRetry)
			}
			c, err = call(ctx, s.paymentTimeout(), func(ctx context.Context) (Charge, error) {
				return s.Payments.Refund(ctx, key, o, "order gave up on a payment with no answer")
			})
		}
		if err != nil {
			return o, fmt.Errorf("charge %s: %w: %w", key, errRetry, err)
		}
	}
	if err != nil { // a permanent refusal: nothing was charged
		return s.move(ctx, o, Releasing, ReasonNoPayment+": "+problemMessage(err))
	}
	switch c.Status {
	case ChargeSucceeded:
		o.ChargeID = c.ID
		return s.move(ctx, o, Charged, "")
	case ChargeDeclined:
		return s.move(ctx, o, Releasing, ReasonDeclined+": "+c.DeclineReason)
	}
	return s.move(ctx, o, Releasing, ReasonNoPayment)
}

// confirm turns the hold into sold seats. A lost answer is settled by reading the hold.
func (s *Saga) confirm(ctx context.Context, o Order) (Order, error) {
	h, err := call(ctx, s.callTimeout(), func(ctx context.Context) (Hold, error) { return s.Holds.ConfirmHold(ctx, o.HoldID) })
	if err != nil && !permanent(err) {
		h, err = call(ctx, s.callTimeout(), func(ctx context.Context) (Hold, error) { return s.Holds.GetHold(ctx, o.HoldID) })
		if err != nil && !permanent(err) || err == nil && h.Status == HoldActive {
			return o, fmt.Errorf("confirm hold %s: %w: %v", o.HoldID, errRetry, err)
		}
	}
	if err == nil && h.Status == HoldConfirmed {
		return s.move(ctx, o, Confirmed, "")
	}
	reason := ReasonHoldSoldOut
	if problem.CodeOf(err) == problem.Gone || h.Status == HoldExpired || h.Status == HoldReleased {
		reason = ReasonHoldGone
	}
	return s.move(ctx, o, Refunding, reason)
}

// release gives the hold's seats back. Released and expired holds are already back.
func (s *Saga) release(ctx context.Context, o Order) (Order, error) {
	_, err := call(ctx, s.callTimeout(), func(ctx context.Context) (Hold, error) { return s.Holds.ReleaseHold(ctx, o.HoldID) })
	switch code := problem.CodeOf(err); {
	case err == nil, code == problem.Gone, code == problem.NotFound:
	case code == problem.Conflict:
		// Sold without a payment: the saga never confirms before charging, so this is a bug
		// or a hand-made change; say so loudly rather than loop.
		s.Log.ErrorContext(ctx, "saga: releasing a confirmed hold", "order", o.ID, "hold", o.HoldID, "error", err)
	default:
		return o, fmt.Errorf("release hold %s: %w: %w", o.HoldID, errRetry, err)
	}
	return s.move(ctx, o, Failed, "")
}

// refund gives the money back after the hold was lost.
func (s *Saga) refund(ctx context.Context, o Order) (Order, error) {
	if o.Free() {
		return s.move(ctx, o, Failed, "")
	}
	_, err := call(ctx, s.paymentTimeout(), func(ctx context.Context) (Charge, error) {
		return s.Payments.Refund(ctx, o.ChargeKey(), o, o.FailureReason)
	})
	if err != nil && !permanent(err) {
		return o, fmt.Errorf("refund %s: %w: %w", o.ChargeKey(), errRetry, err)
	}
	return s.move(ctx, o, Failed, "")
}

func (s *Saga) move(ctx context.Context, o Order, to State, reason string) (Order, error) {
	next, err := o.Move(to, reason, s.Store.Clock.Now().UTC())
	if err != nil {
		return o, err
	}
	if next, err = s.save(ctx, next); err == nil && to.Final() {
		s.outcomes.Add(ctx, 1, metric.WithAttributes(attribute.String("state", string(to))))
	}
	return next, err
}

func (s *Saga) save(ctx context.Context, o Order) (Order, error) {
	o.UpdatedAt = s.Store.Clock.Now().UTC()
	return s.Store.Save(ctx, o)
}

func (s *Saga) callTimeout() time.Duration { return cmp.Or(s.CallTimeout, 2*time.Second) }

func (s *Saga) paymentTimeout() time.Duration { return cmp.Or(s.PaymentTimeout, s.callTimeout()) }

// call runs f with a deadline timeout from now.
func call[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx)
}

// permanent reports whether err is an answer that retrying will not change: the request was
// refused for what it is, not for the state of the network.
func permanent(err error) bool {
	switch problem.CodeOf(err) {
	case problem.Invalid, problem.Forbidden, problem.NotFound, problem.Conflict, problem.Gone, problem.Unprocessable:
		return true
	}
	return false
}

func problemMessage(err error) string {
	if p, ok := errors.AsType[*problem.Error](err); ok {
		return p.Message
	}
	return err.Error()
}
