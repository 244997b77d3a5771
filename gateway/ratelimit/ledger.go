package ratelimit

import (
	"sync"
	"sync/atomic"
)

// maxDebts bounds the keys the ledger holds; what a fallback spends on keys beyond it is not
// charged back.
const maxDebts = 1 << 18

// ledger holds what the fallback spent, per rule and key, until it is charged back to the
// store: without it, every switch to the fallback and back would grant each key a fresh
// budget, and a quota would be granted twice across an outage. Safe for concurrent use.
type ledger struct {
	mu    sync.Mutex
	debts map[answerKey]*debt

	flushing atomic.Bool // a charge-back is under way
	has      atomic.Bool // debts is not empty
}

// debt is what one rule and key owe the store, as a charge ready to send.
type debt struct {
	charge Request
}

// add records that q spent units on the fallback. q is the request as the store decides it,
// not this replica's share.
func (l *ledger) add(q Request, units int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.debts == nil {
		l.debts = make(map[answerKey]*debt)
	}
	k := keyOf(q)
	d := l.debts[k]
	if d == nil {
		if len(l.debts) >= maxDebts {
			return
		}
		d = &debt{charge: Request{Rule: q.Rule, Key: q.Key, Charge: true}}
		l.debts[k] = d
	}
	d.charge.Cost = int(min(int64(d.charge.Cost)+units, MaxCount))
	l.has.Store(true)
}

// owing reports whether any debt waits to be charged back.
func (l *ledger) owing() bool { return l.has.Load() }

// owed is what q's rule and key owe the store now.
func (l *ledger) owed(q Request) int64 {
	if !l.owing() {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.debts[keyOf(q)]; d != nil {
		return int64(d.charge.Cost)
	}
	return 0
}

// takeFor removes the debts of reqs' rules and keys and returns them as charges.
func (l *ledger) takeFor(reqs []Request) []Request {
	if !l.owing() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Request
	for _, q := range reqs {
		k := keyOf(q)
		if d := l.debts[k]; d != nil {
			out = append(out, d.charge)
			delete(l.debts, k)
		}
	}
	l.has.Store(len(l.debts) > 0)
	return out
}

// take removes up to n debts and returns them as charges, one per rule and key.
func (l *ledger) take(n int) []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Request
	for k, d := range l.debts {
		if len(out) == n {
			break
		}
		out = append(out, d.charge)
		delete(l.debts, k)
	}
	l.has.Store(len(l.debts) > 0)
	return out
}

// putBack returns charges that could not be sent, adding to what was spent since.
func (l *ledger) putBack(charges []Request) {
	for _, q := range charges {
		l.add(q, int64(q.Cost))
	}
}
