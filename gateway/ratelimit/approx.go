package ratelimit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"boxoffice.dev/platform/clock"
)

// Approximate decides the rules with Sync set in this replica's memory, by their algorithm,
// on the store's count at the last sync plus its own admissions since, and syncs every key
// in one pipelined round trip per interval (SyncNow). The price of no round trip per
// decision: with R replicas a window may pass limit + (R−1) × what one replica admits
// between syncs. Safe for concurrent use. docs/lessons/distributed.md has the why.
type Approximate struct {
	inner     Limiter
	counts    CountStore
	now       func() time.Time
	decisions *decisionCounter // nil: no metrics
	usage     *usage           // nil: no metrics

	mu   sync.Mutex
	keys map[approxKey]*approxState
}

type approxKey struct{ rule, key string }

// approxState is one rule and key as this replica knows it: the algorithm's state, whose
// counts the last sync replaced with the store's, and what it admitted since, by window.
type approxState struct {
	rule    Rule
	st      state           // *fixedWindow or *slidingCounter
	pending map[int64]int64 // window start (µs) → units admitted here and not yet pushed
	synced  int64           // µs; 0 before the first sync
	used    int64           // µs of the last decision, for dropping idle keys
}

// ApproximateOptions are what NewApproximate adds to the inner limiter and the store.
type ApproximateOptions struct {
	// Clock is the time source; the zero Clock is time.Now.
	Clock clock.Clock
	// Meter receives the decisions made here, in ratelimit_decisions_total with path
	// approximate, and their near-limit and utilization series; nil means none.
	Meter metric.MeterProvider
	// Counts is where the replicas' counts meet; nil means Redis, through NewApproximate's
	// client. MemoryCounts stands in for Redis where there is none, as in the algorithm lab.
	Counts CountStore
}

// CountStore is where replicas push what they admitted and read back everyone's totals, one
// exchange per sync. Its method is unexported: the Redis store and MemoryCounts
// (approxcounts.go) are the two there are.
type CountStore interface {
	// exchange adds each key's sent counts to the store's, then sets its cur to the current
	// window's total and, for a sliding_window, its prev to the previous window's.
	exchange(ctx context.Context, due []*pushed) error
}

// PathApproximate: decided in this replica's memory on the counts of the last sync.
const PathApproximate Path = "approximate"

// NewApproximate wraps inner and syncs with client, or with o.Counts when set.
func NewApproximate(inner Limiter, client redis.UniversalClient, o ApproximateOptions) (*Approximate, error) {
	a := &Approximate{inner: inner, counts: o.Counts, now: o.Clock.Now, keys: map[approxKey]*approxState{}}
	if a.counts == nil {
		a.counts = redisCounts{client}
	}
	if o.Meter != nil {
		c, err := newDecisionCounter(o.Meter.Meter(meterName))
		if err == nil {
			a.usage, err = newUsage(o.Meter.Meter(meterName))
		}
		if err != nil {
			return nil, fmt.Errorf("ratelimit metrics: %w", err)
		}
		a.decisions = c
	}
	return a, nil
}

var _ Limiter = (*Approximate)(nil)

func approximate(r Rule) bool { return r.Sync > 0 }

// MinSync is the shortest Sync a limit may have: the chain looks for counts due for a sync
// every 10ms (syncTick), so a shorter interval would not be kept.
const MinSync = 10 * time.Millisecond

// CheckSync reports a Sync that a limit of window cannot have: it must be from MinSync to
// less than the window.
func CheckSync(sync, window time.Duration) error {
	if sync < MinSync || sync >= window {
		return fmt.Errorf("%v: want from %v to less than the window (%v): counts synced less often than the window would never meet", sync, MinSync, window)
	}
	return nil
}

// Allow decides the approximate rules here and the others on the inner limiter, spending
// nothing unless every enforced rule allows.
func (a *Approximate) Allow(ctx context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	return a.allowValid(ctx, reqs)
}

func (a *Approximate) allowValid(ctx context.Context, reqs []Request) (Result, error) {
	if !slices.ContainsFunc(reqs, func(q Request) bool { return approximate(q.Rule) }) {
		return allowValid(ctx, a.inner, reqs)
	}
	ds := make([]Decision, len(reqs))
	commits := a.decide(reqs, ds)
	var fwd []Request
	var at []int
	for i, q := range reqs {
		if !approximate(q.Rule) {
			fwd, at = append(fwd, q), append(at, i)
		}
	}
	denied := false
	for i, q := range reqs {
		denied = denied || approximate(q.Rule) && !ds[i].Allowed && ds[i].Mode != Shadow
	}
	if denied { // here: the other rules are reported, not asked
		for _, i := range at {
			ds[i] = verdict{allowed: true, remaining: int64(reqs[i].Rule.capacity())}.decision(reqs[i], PathApproximate)
			ds[i].skipped = true
		}
		a.count(ctx, reqs, ds)
		return combine(ds), nil
	}
	if len(fwd) > 0 {
		res, err := allowValid(ctx, a.inner, fwd)
		if err != nil {
			return Result{}, err
		}
		for j, d := range res.Rules {
			ds[at[j]] = d
		}
		if !res.Allowed {
			a.count(ctx, reqs, ds)
			return combine(ds), nil
		}
	}
	a.commit(reqs, commits)
	a.count(ctx, reqs, ds)
	return combine(ds), nil
}

// decide fills in the decisions of the approximate rules of reqs and returns how to spend
// each, nil for the others.
func (a *Approximate) decide(reqs []Request, ds []Decision) []func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now().UnixMicro()
	commits := make([]func(), len(reqs))
	for i, q := range reqs {
		if !approximate(q.Rule) {
			continue
		}
		k := approxKey{q.Rule.ID, q.Key}
		s := a.keys[k]
		if s == nil || s.rule != q.Rule { // a rule edited starts afresh, as in the store
			s = &approxState{rule: q.Rule, st: newState(q.Rule.Algorithm), pending: map[int64]int64{}}
			a.keys[k] = s
		}
		s.used = now
		p, cost := q.Rule.params(), q.cost()
		v, spend := s.st.try(p, now, cost, "")
		ds[i] = v.decision(q, PathApproximate)
		start := now - now%p.window
		commits[i] = func() {
			spend()
			s.pending[start] += cost
		}
	}
	return commits
}

// commit spends the approximate rules' costs, once every rule allowed the request.
func (a *Approximate) commit(reqs []Request, commits []func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range reqs {
		if commits[i] != nil {
			commits[i]()
		}
	}
}

// count records the decisions made here.
func (a *Approximate) count(ctx context.Context, reqs []Request, ds []Decision) {
	if a.decisions == nil {
		return
	}
	for i, q := range reqs {
		if approximate(q.Rule) {
			a.decisions.add(ctx, outcomeKey{q.Rule.ID, outcomeOf(ds[i]), PathApproximate})
			a.usage.record(ctx, ds[i])
		}
	}
}

// Release passes leases to the inner limiter: approximate rules hold none.
func (a *Approximate) Release(ctx context.Context, leases ...Lease) error {
	return a.inner.Release(ctx, leases...)
}

// syncKey is where the store counts a window of an approximate rule and key: its own keys,
// beside the exact algorithms' (storageKey), so switching a rule between exact and
// approximate never reads a state of the other kind.
func syncKey(k approxKey, start int64) string {
	return storageKey(k.rule, k.key) + ":approx:" + strconv.FormatInt(start, 10)
}

// pushed is what one key's sync sent, the units added per window, and the store's answer.
type pushed struct {
	k        approxKey
	s        *approxState
	sent     map[int64]int64
	curStart int64
	cur      int64 // the current window's count, this replica's push included
	prev     int64 // the previous window's, for sliding_window; 0 when absent
}

// SyncNow pushes what this replica admitted since the last sync of every key whose rule's
// Sync has passed, and reads back the store's counts, in one exchange (one pipelined round
// trip to Redis); keys idle for two windows with nothing to push are forgotten. A failed
// sync keeps the pending counts for the next one.
func (a *Approximate) SyncNow(ctx context.Context) error {
	a.mu.Lock()
	now := a.now().UnixMicro()
	var due []*pushed
	for k, s := range a.keys {
		w := s.rule.Window.Microseconds()
		if len(s.pending) == 0 && now-s.used > 2*w {
			delete(a.keys, k)
			continue
		}
		if now-s.synced < s.rule.Sync.Microseconds() {
			continue
		}
		due = append(due, &pushed{k: k, s: s, sent: maps.Clone(s.pending), curStart: now - now%w})
		clear(s.pending)
	}
	a.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	err := a.counts.exchange(ctx, due)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		for _, d := range due { // pushed or not, it is pushed again: INCRBY is not idempotent, but a lost count is worse
			for start, n := range d.sent {
				d.s.pending[start] += n
			}
		}
		return fmt.Errorf("ratelimit: sync approximate counts: %w", err)
	}
	for _, d := range due {
		if a.keys[d.k] != d.s {
			continue // the rule changed meanwhile: its new state starts afresh
		}
		d.s.synced = now
		// The store's count, and what this replica admitted during the round trip.
		cur := d.cur + d.s.pending[d.curStart]
		switch st := d.s.st.(type) {
		case *fixedWindow:
			if st.start == d.curStart {
				st.count = cur
			}
		case *slidingCounter:
			if st.start == d.curStart {
				st.cur, st.prev = cur, d.prev
			}
		}
	}
	return nil
}

// Run syncs every interval until ctx ends; a failed sync is tried again at the next tick.
func (a *Approximate) Run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_ = a.SyncNow(ctx)
	}
}
