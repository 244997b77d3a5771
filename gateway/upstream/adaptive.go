package upstream

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// AdaptiveConcurrency lets a service's concurrency limit find itself below MaxInFlight, by
// additive increase and multiplicative decrease as TCP's window does: an answer slower than
// LatencyTarget, a response timeout or a 503 cuts it by a tenth (once per round trip); an
// answer within the target while busy adds 1/limit. The trade-off: it lags a sudden change by
// a few round trips, and a target below the service's healthy latency pins it at MinInFlight.
// The zero value (LatencyTarget 0) is a fixed MaxInFlight. See docs/lessons/failure-modes.md,
// "A limit that finds itself: adaptive concurrency".
type AdaptiveConcurrency struct {
	// LatencyTarget is the slowest answer (time to the response headers) that still counts
	// as healthy; 0 turns adaptation off. It needs MaxInFlight, the ceiling.
	LatencyTarget time.Duration
	// MinInFlight is the floor of the limit, so that a service always gets some traffic to
	// show it has recovered; 0 means 1. At most MaxInFlight.
	MinInFlight int
}

// adaptiveBackoff is the share of the limit kept at a sign of overload (Netflix's default).
const adaptiveBackoff = 0.9

// adaptiveLimit is a service's adaptive concurrency limit. Safe for concurrent use; current
// takes no lock.
type adaptiveLimit struct {
	cur atomic.Int64 // floor(limit), for the request path

	mu     sync.Mutex
	limit  float64
	min    float64
	max    float64
	target time.Duration
	cutAt  time.Time // the last decrease: answers to requests sent before it cannot cut
}

// newAdaptiveLimit starts at max.
func newAdaptiveLimit(c AdaptiveConcurrency, max int) *adaptiveLimit {
	a := &adaptiveLimit{limit: float64(max)}
	a.configure(c, max)
	return a
}

// configure changes the bounds and target, keeping the limit reached within the new bounds.
func (a *adaptiveLimit) configure(c AdaptiveConcurrency, max int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.min, a.max, a.target = float64(c.MinInFlight), float64(max), c.LatencyTarget
	if a.min < 1 {
		a.min = 1
	}
	a.setLocked(a.limit)
}

// current is the limit in force: at least MinInFlight, at most MaxInFlight.
func (a *adaptiveLimit) current() int { return int(a.cur.Load()) }

// latencyTarget is LatencyTarget.
func (a *adaptiveLimit) latencyTarget() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.target
}

// observe adapts the limit to the answer, at now, of a request sent at sent: how long its
// headers took, whether the service said it was overloaded (a 503, or no answer within the
// response timeout), and how many requests were in flight to the service, this one
// included.
func (a *adaptiveLimit) observe(sent, now time.Time, latency time.Duration, overloaded bool, inFlight int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if overloaded || latency > a.target {
		if sent.Before(a.cutAt) {
			return // admitted under the limit already cut: the same episode
		}
		a.cutAt = now
		a.setLocked(a.limit * adaptiveBackoff)
		return
	}
	if float64(inFlight)*2 >= a.limit {
		a.setLocked(a.limit + 1/a.limit)
	}
}

// setLocked sets the limit within the bounds. a.mu is held.
func (a *adaptiveLimit) setLocked(limit float64) {
	a.limit = min(max(limit, a.min), a.max)
	a.cur.Store(int64(math.Floor(a.limit)))
}
