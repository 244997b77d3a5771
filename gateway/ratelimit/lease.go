package ratelimit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"boxoffice.dev/platform/clock"
)

// Leases relieves hot keys by spending tokens locally: for a rule with Lease > 0, a replica
// takes a batch of Lease tokens from the store (in the request's round trip) and spends it on
// later requests, so a hot key costs one store call per Lease requests. The price: an
// overshoot of at most replicas × Lease per rule and key (TestLeasesOvershootBound), and an
// undershoot near exhaustion. A request with no leased rule goes to the inner limiter as it
// is. Safe for concurrent use. See docs/lessons/hot-keys.md, "Token leases: fewer round trips".
type Leases struct {
	inner     Limiter
	now       func() time.Time
	decisions *decisionCounter // nil: no metrics

	mu     sync.Mutex
	held   map[string]*inHand
	sweeps sweeper
}

// inHand is what a replica holds of one rule and key, and what the store said when it was
// taken, so that a decision made in hand reports the budget as the replica last knew it.
type inHand struct {
	tokens  int64
	expires time.Time
	// stored is what the store had left after the batch was taken; resetAt is when, as it
	// said then, its budget would be full again.
	stored  int64
	resetAt time.Time
}

// decision is a leased request's decision as this replica knows the budget: what the store
// had left at the last batch plus the tokens still in hand. Other replicas may have spent
// from the store since, so Remaining is an upper estimate, never more than the limit.
func (h *inHand) decision(q Request, now time.Time, path Path) Decision {
	d := verdict{allowed: true, remaining: h.stored + h.tokens}.decision(q, path)
	d.Remaining = min(d.Remaining, q.Rule.capacity())
	d.Reset = max(0, h.resetAt.Sub(now))
	return d
}

// NewLeases wraps inner, usually a Failsafe or a Redis, reading time from c.
func NewLeases(inner Limiter, c clock.Clock) *Leases {
	return &Leases{inner: inner, now: c.Now, held: make(map[string]*inHand)}
}

// LeasesOptions are what NewLeasesWith adds to NewLeases.
type LeasesOptions struct {
	// Clock is the time source; the zero Clock is time.Now.
	Clock clock.Clock
	// Meter receives the decisions made on tokens in hand, in ratelimit_decisions_total with
	// path lease, next to Failsafe's; nil means none.
	Meter metric.MeterProvider
}

// NewLeasesWith is NewLeases with metrics.
func NewLeasesWith(inner Limiter, o LeasesOptions) (*Leases, error) {
	l := NewLeases(inner, o.Clock)
	if o.Meter != nil {
		c, err := newDecisionCounter(o.Meter.Meter(meterName))
		if err != nil {
			return nil, fmt.Errorf("ratelimit metrics: %w", err)
		}
		l.decisions = c
	}
	return l, nil
}

var _ Limiter = (*Leases)(nil)

// Allow decides leased rules on tokens in hand where it can and sends the rest, with batch
// requests for leased rules that ran out, to the inner limiter in one call.
// The requests are validated here, once for the whole chain below.
func (l *Leases) Allow(ctx context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	return l.allowValid(ctx, reqs)
}

func (l *Leases) allowValid(ctx context.Context, reqs []Request) (Result, error) {
	if !slices.ContainsFunc(reqs, func(q Request) bool { return leased(q.Rule) }) {
		return allowValid(ctx, l.inner, reqs)
	}
	now := l.now()
	ds := make([]Decision, len(reqs))
	spent := l.spendInHand(reqs, now, ds)
	defer l.count(ctx, reqs, spent)

	var fwd []Request
	var at []int
	for i, q := range reqs {
		if spent[i] {
			continue
		}
		if leased(q.Rule) {
			q.Cost = int(max(q.cost(), int64(q.Rule.Lease))) // ask for a whole batch
		}
		fwd = append(fwd, q)
		at = append(at, i)
	}
	if len(fwd) == 0 {
		return combine(ds), nil
	}
	res, err := allowValid(ctx, l.inner, fwd)
	if err != nil {
		l.refund(reqs, spent)
		clear(spent) // nothing was decided
		return Result{}, err
	}
	for j, d := range res.Rules {
		ds[at[j]] = d
	}
	if !res.Allowed {
		l.refund(reqs, spent)
		return combine(ds), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, i := range at {
		q := reqs[i]
		if !leased(q.Rule) || !ds[i].Allowed {
			continue
		}
		// The batch minus this request goes in hand, capped at one batch: tokens beyond it
		// (two replicas' goroutines fetched at once) are dropped, never spent.
		k := storageKey(q.Rule.ID, q.Key)
		h := l.held[k]
		if h == nil || !now.Before(h.expires) {
			h = &inHand{}
			l.held[k] = h
		}
		h.tokens = min(int64(q.Rule.Lease), h.tokens+max(0, int64(q.Rule.Lease)-q.cost()))
		h.expires = now.Add(q.Rule.Window)
		h.stored, h.resetAt = int64(ds[i].Remaining), now.Add(ds[i].Reset)
		ds[i] = h.decision(q, now, ds[i].Path)
	}
	return combine(ds), nil
}

// Release passes leases of concurrency rules to the inner limiter.
func (l *Leases) Release(ctx context.Context, leases ...Lease) error {
	return l.inner.Release(ctx, leases...)
}

// spendInHand takes each leased request's cost from the tokens in hand, if enough are
// there and not expired, and fills in its decision. It reports which requests it took.
func (l *Leases) spendInHand(reqs []Request, now time.Time, ds []Decision) []bool {
	spent := make([]bool, len(reqs))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	for i, q := range reqs {
		if !leased(q.Rule) {
			continue
		}
		h := l.held[storageKey(q.Rule.ID, q.Key)]
		if h == nil || !now.Before(h.expires) || h.tokens < q.cost() {
			continue
		}
		h.tokens -= q.cost()
		spent[i] = true
		ds[i] = h.decision(q, now, PathLease)
	}
	return spent
}

// refund puts back tokens spent in hand by a request that was denied after all.
func (l *Leases) refund(reqs []Request, spent []bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range reqs {
		if spent[i] {
			if h := l.held[storageKey(q.Rule.ID, q.Key)]; h != nil {
				h.tokens += q.cost()
			}
		}
	}
}

// count records the decisions made on tokens in hand; they are allowed whatever the other
// rules of the request said.
func (l *Leases) count(ctx context.Context, reqs []Request, spent []bool) {
	if l.decisions == nil {
		return
	}
	for i, q := range reqs {
		if spent[i] {
			l.decisions.add(ctx, outcomeKey{q.Rule.ID, "allowed", PathLease})
		}
	}
}

// sweep drops the tokens in hand whose window ended, once every len(held) calls (64 at
// least), so its cost per call stays constant however many keys are held. Call it with mu
// held.
func (l *Leases) sweep(now time.Time) {
	if l.sweeps.due(len(l.held)) {
		maps.DeleteFunc(l.held, func(_ string, h *inHand) bool { return !now.Before(h.expires) })
	}
}

func leased(r Rule) bool { return r.Lease > 0 && r.Algorithm != Concurrency }
