package ratelimit

import (
	"maps"
	"sync"
	"time"
)

// maxAnswers bounds the keys answers remembers; past it, new keys are not remembered (they
// are then asked of the store each time, and start full in a fallback, as before).
const maxAnswers = 1 << 20

// answers remembers, per rule and key, the store's last answer: what was left, and until
// when a denied key stays denied. Failsafe reads it twice: to deny locally a key the store
// said is over its limit until a reset, without a store call (as envoy's ratelimit local
// cache does), and to start a fallback from the store's last state rather than from a full
// budget. Safe for concurrent use.
type answers struct {
	denyFor time.Duration // the longest local denial; 0 means none

	mu     sync.Mutex
	m      map[answerKey]*answer
	sweeps sweeper
}

// answerKey names one rule's state for one key. The rule's numbers are part of it, so a
// rule changed by an edit never reads an answer given under its old numbers.
type answerKey struct {
	rule, key string
	p         params
}

func keyOf(q Request) answerKey { return answerKey{q.Rule.ID, q.Key, q.Rule.params()} }

type answer struct {
	remaining int64
	at        time.Time // when the store answered
	full      time.Time // when the budget is full again if nothing more is spent
	seeded    time.Time // when a fallback last started from this answer
	// A denial: requests of deniedCost or more are denied locally until deniedUntil, as
	// denial says; the store said they would pass again at retryAt, maybe later.
	deniedUntil, retryAt time.Time
	deniedCost           int64
	denial               Decision
}

func newAnswers(denyFor time.Duration) *answers {
	return &answers{denyFor: denyFor, m: make(map[answerKey]*answer)}
}

// remembered reports whether a request's rule is worth remembering: a concurrency slot is
// given back at any moment, so neither its remaining count nor its denial holds; a level of
// a hierarchy answers differently to a borrower and to a request within its share.
func remembered(q Request) bool { return q.Rule.Algorithm != Concurrency && !q.Rule.inHierarchy() }

// record keeps the store's answers to reqs, given at now.
func (a *answers) record(reqs []Request, res Result, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(now)
	for i, d := range res.Rules {
		q := reqs[i]
		if !remembered(q) || d.Path != PathStore {
			continue
		}
		k := keyOf(q)
		e := a.m[k]
		if e == nil {
			if len(a.m) >= maxAnswers {
				continue
			}
			e = &answer{}
			a.m[k] = e
		}
		e.remaining, e.at, e.full = int64(d.Remaining), now, now.Add(d.Reset)
		if a.denyFor > 0 && !d.Allowed && d.Mode != Shadow && !q.Charge && d.RetryAfter > 0 {
			e.deniedUntil, e.retryAt = now.Add(min(d.RetryAfter, a.denyFor)), now.Add(d.RetryAfter)
			e.deniedCost = q.cost()
			e.denial = d
		}
	}
}

// denied returns a denial of reqs when the store denied one of their enforced rules until
// later than now, for a cost no greater than the request's. The store's state for that key
// can only have been spent further since (by other replicas), so the denial still holds:
// stale at most when the store lost its data or an operator reset the key, and then for at
// most denyFor. The request's other rules are reported unspent, as the store would.
func (a *answers) denied(reqs []Request, now time.Time) (Result, bool) {
	if a.denyFor <= 0 {
		return Result{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	hit := -1
	var e *answer
	for i, q := range reqs {
		if !remembered(q) || q.Charge || !q.enforced() {
			continue
		}
		if e = a.m[keyOf(q)]; e != nil && now.Before(e.deniedUntil) && q.cost() >= e.deniedCost {
			hit = i
			break
		}
	}
	if hit < 0 {
		return Result{}, false
	}
	ds := make([]Decision, len(reqs))
	for i, q := range reqs {
		if i == hit {
			d := e.denial
			d.RetryAfter = e.retryAt.Sub(now) // the store's wait, not how long it is cached
			d.Reset = max(0, e.full.Sub(now))
			d.Path = PathLocalDeny
			ds[i] = d
			continue
		}
		v := verdict{allowed: true, remaining: int64(q.Rule.capacity())}
		if o := a.m[keyOf(q)]; o != nil && now.Before(o.full) {
			v.remaining, v.reset = o.remaining, o.full.Sub(now).Microseconds()
		}
		ds[i] = v.decision(q, PathLocalDeny)
		ds[i].skipped = true
	}
	return combine(ds), true
}

// reseed reports what the store last said was left of q's budget when a fallback should
// start from it: when the store has answered since a fallback last did. Once the budget is
// full again the answer no longer matters and the fallback starts full.
func (a *answers) reseed(q Request, now time.Time) (remaining int64, ok bool) {
	if !remembered(q) {
		return 0, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.m[keyOf(q)]
	if e == nil || !e.at.After(e.seeded) {
		return 0, false
	}
	e.seeded = now
	if !now.Before(e.full) {
		return int64(q.Rule.capacity()), true
	}
	return e.remaining, true
}

// sweep drops the answers that no longer matter, once every len(m) calls. Call it with mu
// held.
func (a *answers) sweep(now time.Time) {
	if a.sweeps.due(len(a.m)) {
		maps.DeleteFunc(a.m, func(_ answerKey, e *answer) bool {
			return !now.Before(e.full) && !now.Before(e.deniedUntil)
		})
	}
}
