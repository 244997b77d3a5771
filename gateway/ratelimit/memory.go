package ratelimit

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"time"

	"boxoffice.dev/platform/clock"
)

// Memory is an in-process Limiter: a limit local to one process, the fallback while the
// shared store is down, and the engine of the algorithm lab. It makes the same decisions as
// the Redis scripts on the same sequence of requests and times.
//
// Idle keys are dropped once their state no longer matters, so memory follows the active
// clients. Memory is safe for concurrent use; one mutex serialises decisions.
type Memory struct {
	now func() time.Time

	mu     sync.Mutex
	keys   map[string]*entry
	sweeps sweeper
	leases uint64
	last   int64 // µs; the latest time decided at, so time never runs backwards
}

type entry struct {
	st      state
	alg     Algorithm
	expires int64 // µs; the state decides like an empty one from then on
}

// NewMemory returns an empty in-memory limiter reading time from c.
func NewMemory(c clock.Clock) *Memory {
	return &Memory{now: c.Now, keys: make(map[string]*entry)}
}

var _ Limiter = (*Memory)(nil)

// Allow decides reqs together: budgets are spent only if every enforced rule allows. It fails
// only on an invalid request.
func (m *Memory) Allow(_ context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	return m.decide(reqs, true, PathMemory), nil
}

// decide is Allow on valid requests. With spend false it only reports (the request was
// denied elsewhere); path is recorded in the decisions.
func (m *Memory) decide(reqs []Request, spend bool, path Path) Result {
	// The clock is read under the lock and never goes back: a time read before waiting for
	// the lock would be older than states others saved meanwhile, and GCRA would deny a
	// request that arrived in budget (seen under overload with the breaker open).
	m.mu.Lock()
	defer m.mu.Unlock()
	now := max(m.now().UnixMicro(), m.last)
	m.last = now
	m.sweep(now)
	if up := parents(reqs); up != nil {
		return m.decideChains(reqs, up, spend, path, now)
	}

	ds := make([]Decision, len(reqs))
	commits := make([]func() int64, len(reqs))
	ents := make([]*entry, len(reqs))
	for i, q := range reqs {
		e := m.lookup(q, now)
		lease := ""
		if q.Rule.Algorithm == Concurrency {
			m.leases++
			lease = "m" + strconv.FormatUint(m.leases, 10)
		}
		v, commit := e.st.try(q.Rule.params(), now, q.cost(), lease)
		ds[i] = v.decision(q, path)
		if v.allowed && lease != "" {
			ds[i].Lease = &Lease{Rule: q.Rule.ID, Key: q.Key, ID: lease, local: true}
		}
		commits[i], ents[i] = commit, e
	}
	admit := spend && admitted(ds)
	for i, q := range reqs {
		switch {
		case q.Charge && spend:
			m.commit(q, ents[i], now+commits[i]())
			// Report the budget after the charge.
			v, _ := ents[i].st.try(q.Rule.params(), now, 0, "")
			ds[i] = v.decision(q, path)
		case admit && ds[i].Allowed:
			m.commit(q, ents[i], now+commits[i]())
		case ds[i].Allowed:
			// Nothing is spent: report the budget as it stands.
			v, _ := ents[i].st.try(q.Rule.params(), now, 0, "")
			ds[i] = v.decision(q, path)
		}
	}
	return combine(ds)
}

// commit keeps a key's state, which matters until expires (µs).
func (m *Memory) commit(q Request, e *entry, expires int64) {
	m.keep(storageKey(q.Rule.ID, q.Key), e, expires)
}

// keep stores the state at key, which matters until expires (µs).
func (m *Memory) keep(key string, e *entry, expires int64) {
	e.expires = max(e.expires, expires)
	m.keys[key] = e
}

// Release frees concurrency leases before they expire.
func (m *Memory) Release(_ context.Context, leases ...Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range leases {
		if e, ok := m.keys[storageKey(l.Rule, l.Key)]; ok {
			if c, ok := e.st.(*concurrency); ok {
				c.release(l.ID)
			}
		}
	}
	return nil
}

// restart forgets q's key and starts it afresh with spent units already spent (none if
// spent ≤ 0): a fallback starting from what the store last said was left.
func (m *Memory) restart(q Request, spent int64) {
	m.mu.Lock()
	delete(m.keys, storageKey(q.Rule.ID, q.Key))
	m.mu.Unlock()
	if spent > 0 {
		q.Cost, q.Charge = int(min(spent, MaxCount)), true
		m.decide([]Request{q}, true, PathFallback)
	}
}

// Len reports how many keys hold state, expired ones included until the next sweep.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}

// lookup returns the live state of a request's key, or a new empty one that is stored only
// if the request commits. A rule whose algorithm changed starts afresh.
func (m *Memory) lookup(q Request, now int64) *entry {
	return m.lookupKey(storageKey(q.Rule.ID, q.Key), q.Rule.Algorithm, now)
}

// lookupKey is lookup of the state stored at key.
func (m *Memory) lookupKey(key string, a Algorithm, now int64) *entry {
	e, ok := m.keys[key]
	if ok && e.expires > now && e.alg == a {
		return e
	}
	return &entry{st: newState(a), alg: a}
}

// sweep drops expired keys once every len(keys) decisions, so its cost per decision stays
// constant however many keys there are.
func (m *Memory) sweep(now int64) {
	if m.sweeps.due(len(m.keys)) {
		maps.DeleteFunc(m.keys, func(_ string, e *entry) bool { return e.expires <= now })
	}
}

// sweeper spaces out full passes over a map of expiring entries: one every len(map) calls,
// 64 at least, so that a call costs a constant amount on average however many keys there
// are. Memory and Leases each keep one, guarded by their own mutex.
type sweeper struct{ calls int }

// due counts a call and reports whether a pass over n entries is due now.
func (s *sweeper) due(n int) bool {
	s.calls++
	if s.calls < max(64, n) {
		return false
	}
	s.calls = 0
	return true
}
