package upstream

import (
	"sync"
	"time"
)

// budgetSlots is how many slices a budget window is counted in: the window slides by a tenth.
const budgetSlots = 10

// retryBudget counts one service's requests and retries over a sliding window (budgetSlots
// slices) and allows a retry only while retries stay within Ratio × requests + MinPerSecond ×
// Window: retries mask the odd failure, and when everything fails they add at most Ratio to
// the load (docs/lessons/client-contract.md, "Retry storms"). Safe for concurrent use; set
// changes the limits under the same lock.
type retryBudget struct {
	mu        sync.Mutex
	ratio     float64
	reserve   float64 // MinPerSecond × Window seconds
	slot      int64   // nanoseconds per slice
	unlimited bool
	slots     [budgetSlots]budgetSlot
}

type budgetSlot struct {
	epoch             int64 // which slice of time the counts belong to
	requests, retries int64
}

func newRetryBudget(b RetryBudget) *retryBudget {
	rb := &retryBudget{}
	rb.set(b)
	return rb
}

// set changes the budget's limits. A new ratio or floor judges the counts so far, so a
// tighter budget bites at once; a new window changes what a slice means, so the counts start
// afresh rather than be read at the wrong scale.
func (b *retryBudget) set(c RetryBudget) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ratio, b.unlimited = c.Ratio, c.Unlimited
	b.reserve = c.MinPerSecond * c.Window.Seconds()
	if slot := max(int64(c.Window)/budgetSlots, 1); slot != b.slot {
		b.slot = slot
		b.slots = [budgetSlots]budgetSlot{}
	}
}

// request counts a request sent at now.
func (b *retryBudget) request(now time.Time) {
	b.mu.Lock()
	b.current(now).requests++
	b.mu.Unlock()
}

// retry reports whether a retry at now fits the budget, and counts it when it does.
func (b *retryBudget) retry(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.current(now)
	var requests, retries int64
	for _, s := range b.slots {
		if s.epoch > cur.epoch-budgetSlots {
			requests += s.requests
			retries += s.retries
		}
	}
	if !b.unlimited && float64(retries+1) > b.ratio*float64(requests)+b.reserve {
		return false
	}
	cur.retries++
	return true
}

// current returns the slice now falls in, emptied if it last held older counts. b.mu is held.
func (b *retryBudget) current(now time.Time) *budgetSlot {
	epoch := now.UnixNano() / b.slot
	s := &b.slots[epoch%budgetSlots]
	if s.epoch != epoch {
		*s = budgetSlot{epoch: epoch}
	}
	return s
}
