package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/metric"

	"boxoffice.dev/platform/clock"
)

// Failsafe is the Limiter a gateway uses: it decides on the shared store and keeps deciding,
// without an error, when the store is slow or down. Each round trip has a short budget (5 ms
// by default: a slow limiter is worse than none) and a Breaker judges the store; while it is
// unavailable, FailOpen rules decide locally at Limit/N and FailClosed rules deny. Give the
// Redis client ContextTimeoutEnabled, or each call runs on a goroutine of its own so the
// budget holds. Safe for concurrent use. docs/lessons/failure-modes.md, "The limiter's store
// (Redis) is slow or down", tells the whole story and states each overshoot bound.
type Failsafe struct {
	open, closed *lane
	local        *Memory
	replicas     ReplicaCount
	answers      *answers
	ledger       *ledger
	metrics      *metrics
	now          func() time.Time
	log          *slog.Logger
}

// lane is one path to the store: its calls, their budget and the breaker that judges them.
type lane struct {
	name    string
	store   Limiter
	direct  bool // the store ends its calls at the deadline by itself and honours budget
	budget  budget
	circuit *circuit
}

// deadlineBound is a store that can tell whether its calls end at their context's deadline.
type deadlineBound interface{ boundByDeadline() bool }

var _ deadlineBound = (*Redis)(nil)

// ReplicaCount tells how many gateway replicas share the limits; *Replicas is one.
type ReplicaCount interface{ Count() int }

var _ ReplicaCount = (*Replicas)(nil)

// FailsafeOptions configures a Failsafe; the zero value gives the defaults.
type FailsafeOptions struct {
	// Timeout bounds each store round trip from the moment it is written; 0 means 5ms.
	Timeout time.Duration
	// QueueWait bounds the wait for a round trip slot; 0 means Timeout. A call that waits
	// longer is decided without the store but does not count against it.
	QueueWait time.Duration
	// ClosedStore is the fail-closed lane's store, usually a *Redis on a client of its own;
	// nil means the same store, still behind a breaker of its own.
	ClosedStore Limiter
	// ClosedTimeout is Timeout for the fail-closed lane; 0 means 50ms. Its alternative to
	// waiting is a refusal, not a fallback, so it waits longer.
	ClosedTimeout time.Duration
	// DenyFor caps how long a key the store denied is denied locally; 0 means 1s, negative
	// means never (every request asks the store).
	DenyFor time.Duration
	// Breaker configures the circuit breaker of each lane.
	Breaker Breaker
	// Replicas gives N for the fallback's Limit/N; nil means N = 1.
	Replicas ReplicaCount
	// Clock is the time source; the zero Clock is time.Now.
	Clock clock.Clock
	// Meter receives the metrics; nil means none.
	Meter metric.MeterProvider
	// Logger reports breaker state changes; nil discards.
	Logger *slog.Logger
}

// NewFailsafe wraps store, usually a *Redis.
func NewFailsafe(store Limiter, opts FailsafeOptions) (*Failsafe, error) {
	f := &Failsafe{replicas: opts.Replicas, now: opts.Clock.Now, log: opts.Logger}
	if f.replicas == nil {
		f.replicas = oneReplica{}
	}
	if f.log == nil {
		f.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Millisecond
	}
	queue := opts.QueueWait
	if queue <= 0 {
		queue = timeout
	}
	f.open = f.newLane("open", store, timeout, queue, opts.Breaker)
	closedStore, closedTimeout := opts.ClosedStore, opts.ClosedTimeout
	if closedStore == nil {
		closedStore = store
	}
	if closedTimeout <= 0 {
		closedTimeout = 50 * time.Millisecond
	}
	f.closed = f.newLane("closed", closedStore, closedTimeout, closedTimeout, opts.Breaker)
	denyFor := opts.DenyFor
	if denyFor == 0 {
		denyFor = time.Second
	}
	f.local = NewMemory(clock.Func(f.now))
	f.answers = newAnswers(max(0, denyFor))
	f.ledger = &ledger{}
	var err error
	if f.metrics, err = newMetrics(opts.Meter, f.breakerStates); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *Failsafe) newLane(name string, store Limiter, roundTrip, queue time.Duration, b Breaker) *lane {
	l := &lane{name: name, store: store, budget: budget{roundTrip: roundTrip, queueWait: queue}}
	if d, ok := store.(deadlineBound); ok {
		l.direct = d.boundByDeadline()
	}
	l.circuit = newCircuit(b, f.now, func(from, to BreakerState, why string) {
		f.log.Warn("rate limit store breaker", "lane", name, "from", from.String(), "to", to.String(), "why", why)
	})
	return l
}

var _ Limiter = (*Failsafe)(nil)

// Allow decides reqs locally when the store already denied one of their keys, else on the
// store or, if it is unavailable, by each rule's OnStoreFailure. It returns an error only
// for invalid requests.
func (f *Failsafe) Allow(ctx context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	return f.allowValid(ctx, reqs)
}

func (f *Failsafe) allowValid(ctx context.Context, reqs []Request) (Result, error) {
	start := f.now()
	res, ok := f.answers.denied(reqs, start)
	if !ok {
		res = f.decide(ctx, reqs, start)
	}
	f.metrics.decided(ctx, res, f.now().Sub(start))
	return res, nil
}

// decide asks the store through the request's lane, or decides without it.
func (f *Failsafe) decide(ctx context.Context, reqs []Request, now time.Time) Result {
	ln := f.laneOf(reqs)
	if !ln.circuit.allow() {
		f.metrics.storeError(ctx, ln.name, "breaker_open")
		return f.degrade(reqs, now)
	}
	if err := f.chargeBack(ctx, ln, f.ledger.takeFor(reqs), now); err != nil {
		ln.circuit.done(judge(err))
		return f.degrade(reqs, now)
	}
	res, err := f.ask(ctx, ln, reqs)
	ln.circuit.done(judge(err))
	if err != nil && ln == f.closed && judge(err) != callUnreachable && ln.circuit.allow() {
		// A fail-closed request refuses only when the store is down, not when one round trip
		// was late: it tries once more while its breaker still trusts the store.
		f.metrics.storeError(ctx, ln.name, errorKind(err))
		res, err = f.ask(ctx, ln, reqs)
		ln.circuit.done(judge(err))
	}
	if err != nil {
		f.metrics.storeError(ctx, ln.name, errorKind(err))
		return f.degrade(reqs, now)
	}
	f.answers.record(reqs, res, now)
	if ln == f.open && f.ledger.owing() { // the closed lane is kept for its own requests
		f.chargeBackSoon(ln)
	}
	return res
}

// chargeBack sends debts to the store before the request whose keys owe them is decided
// there, so that it sees the budget the fallback spent. Only the first requests after an
// outage pay this round trip. Debts that cannot be sent are kept.
func (f *Failsafe) chargeBack(ctx context.Context, ln *lane, debts []Request, now time.Time) error {
	if len(debts) == 0 {
		return nil
	}
	res, err := f.ask(ctx, ln, debts)
	if err != nil {
		f.ledger.putBack(debts)
		f.metrics.storeError(ctx, ln.name, errorKind(err))
		return err
	}
	f.answers.record(debts, res, now)
	f.metrics.chargedBack(ctx, debts)
	return nil
}

// laneOf is the closed lane for a request with an enforced fail-closed rule, else the open.
func (f *Failsafe) laneOf(reqs []Request) *lane {
	for _, q := range reqs {
		if q.Rule.OnStoreFailure == FailClosed && q.enforced() {
			return f.closed
		}
	}
	return f.open
}

// Release frees concurrency leases where they were taken. A lease the store cannot release
// now expires by itself after its rule's Window.
func (f *Failsafe) Release(ctx context.Context, leases ...Lease) error {
	var stored []Lease
	for _, l := range leases {
		if l.local {
			_ = f.local.Release(ctx, l)
		} else {
			stored = append(stored, l)
		}
	}
	if len(stored) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.open.budget.queueWait+f.open.budget.roundTrip)
	defer cancel()
	if err := f.open.store.Release(ctx, stored...); err != nil {
		f.metrics.storeError(ctx, f.open.name, errorKind(err))
		return err
	}
	return nil
}

// BreakerOpen reports whether the open lane's store calls are being skipped.
func (f *Failsafe) BreakerOpen() bool { return f.open.circuit.current() == Open }

func (f *Failsafe) breakerStates() map[string]BreakerState {
	return map[string]BreakerState{f.open.name: f.open.circuit.current(), f.closed.name: f.closed.circuit.current()}
}

// ask calls the lane's store within its budgets: directly if the store ends its calls at
// the deadline, else on a goroutine of its own so the budget holds even if the client
// ignores context deadlines on its sockets.
func (f *Failsafe) ask(ctx context.Context, ln *lane, reqs []Request) (Result, error) {
	if ln.direct { // the store sets the deadline when it writes
		res, err := allowValid(withBudget(ctx, &ln.budget), ln.store, reqs)
		if err != nil {
			return Result{}, fmt.Errorf("ratelimit: store: %w", err)
		}
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ln.budget.queueWait+ln.budget.roundTrip)
	defer cancel()
	type answer struct {
		res Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := allowValid(ctx, ln.store, reqs)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return Result{}, fmt.Errorf("ratelimit: store: %w", ctx.Err())
	}
}

// degrade decides without the store: fail-closed rules deny, the others decide locally at
// their share of the limit, starting from the store's last answer for their key. If an
// enforced rule fails closed the local limiter only reports. What the local limiter spends
// is owed to the store.
func (f *Failsafe) degrade(reqs []Request, now time.Time) Result {
	n := max(1, f.replicas.Count())
	ds := make([]Decision, len(reqs))
	closed := false
	var local []Request
	var at []int
	for i, q := range reqs {
		if q.Rule.OnStoreFailure == FailClosed {
			mode, unenforced := q.mode()
			ds[i] = Decision{RetryAfter: f.closed.circuit.cfg.OpenFor, Limit: q.Rule.Limit, Window: q.Rule.Window,
				Rule: q.Rule.ID, Mode: mode, Unenforced: unenforced, Path: PathFailClosed}
			closed = closed || q.enforced()
			continue
		}
		sq := share(q, n)
		if remaining, ok := f.answers.reseed(q, now); ok {
			spent := int64(sq.Rule.capacity()) - remaining/int64(n) + f.ledger.owed(q)
			f.local.restart(sq, spent)
		}
		local = append(local, sq)
		at = append(at, i)
	}
	if len(local) == 0 {
		return combine(ds)
	}
	res := f.local.decide(local, !closed, PathFallback)
	spent := !closed && (res.Allowed || anyCharge(local))
	for j, d := range res.Rules {
		ds[at[j]] = d
		q := reqs[at[j]]
		// A level of a hierarchy is not charged back: its debt alone, without its chain,
		// would be decided as a flat rule. The store forgets what the fallback spent on it.
		if spent && q.Rule.Algorithm != Concurrency && !q.Rule.inHierarchy() && (q.Charge || res.Allowed && d.Allowed) {
			f.ledger.add(q, q.cost())
		}
	}
	return combine(ds)
}

func anyCharge(reqs []Request) bool {
	for _, q := range reqs {
		if q.Charge {
			return true
		}
	}
	return false
}

// chargeBackSoon sends the other keys' debts to the store in the background, once at a
// time, so that keys that ask no more are charged too (a quota's next request may come in a
// week). A request for a key whose debt is in such a batch, decided meanwhile, may pass on
// budget the fallback already spent: at most the requests of one round trip.
func (f *Failsafe) chargeBackSoon(ln *lane) {
	if !f.ledger.flushing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer f.ledger.flushing.Store(false)
		for range maxChargeBatches {
			debts := f.ledger.take(maxBatch)
			if len(debts) == 0 {
				return
			}
			if err := f.chargeBack(context.Background(), ln, debts, f.now()); err != nil {
				return
			}
		}
	}()
}

// maxChargeBatches bounds one charge-back pass; what is left waits for the next store answer.
const maxChargeBatches = 64

// share is a request against this replica's share of its rule: Limit/N and Burst/N, and
// for a level of a hierarchy Ceiling/N and Reserve/N, so the replicas' chains add up to one.
func share(q Request, n int) Request {
	q.Rule.Limit = max(1, q.Rule.Limit/n)
	if q.Rule.Burst > 0 {
		q.Rule.Burst = max(1, q.Rule.Burst/n)
	}
	if lv := q.Rule.Level; lv != nil { // a copy: the rule's Level is shared
		q.Rule.Level = &Level{Parent: lv.Parent, Ceiling: lv.Ceiling, Reserve: lv.Reserve}
		if lv.Ceiling > 0 {
			q.Rule.Level.Ceiling = max(q.Rule.Limit, lv.Ceiling/n)
		}
		if lv.Reserve > 0 {
			q.Rule.Level.Reserve = max(1, lv.Reserve/n)
		}
	}
	return q
}

// judge is how a store call counts for its breaker: a call that never left, or whose caller
// gave up, says nothing about the store.
func judge(err error) callOutcome {
	switch {
	case err == nil:
		return callOK
	case errors.Is(err, ErrNoSlot), errors.Is(err, context.Canceled):
		return callNotCounted
	case unreachable(err):
		return callUnreachable
	}
	return callSlow
}

// unreachable reports an error that says the store could not be reached at all: refused,
// reset or closed connections, a failed dial.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &op) && op.Op == "dial" && !op.Timeout()
}

// errorKind names a store failure for metrics.
func errorKind(err error) string {
	switch {
	case errors.Is(err, ErrNoSlot):
		return "no_slot"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case unreachable(err):
		return "unreachable"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "error"
}

// oneReplica is the replica count of a gateway that runs alone.
type oneReplica struct{}

func (oneReplica) Count() int { return 1 }
