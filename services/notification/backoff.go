package notification

import (
	"log/slog"
	"time"
)

// The defaults of Consumer.Backoff and MaxBackoff, and how often a message stuck at the
// longest back-off is logged again.
const (
	defaultBackoff    = time.Second
	defaultMaxBackoff = 5 * time.Minute
	// remindEvery deliveries at the longest back-off, a stuck message is logged again: about
	// once an hour with the default MaxBackoff.
	remindEvery = 12
)

// backoff is how long a message whose store write failed waits before it is delivered
// again: first after the first delivery, doubling with each delivery up to max. Make one
// with newBackoff.
type backoff struct {
	first, max time.Duration
}

// newBackoff returns the back-off from first to longest; a value of 0 or less means its
// default, and a longest below first means first.
func newBackoff(first, longest time.Duration) backoff {
	if first <= 0 {
		first = defaultBackoff
	}
	if longest <= 0 {
		longest = defaultMaxBackoff
	}
	return backoff{first: first, max: max(first, longest)}
}

// delay is the wait before the delivery that follows delivery n (1 is the first).
func (b backoff) delay(n uint64) time.Duration {
	d := b.first
	for i := uint64(1); i < n && d < b.max; i++ {
		if d > b.max/2 { // doubling would pass max, or overflow
			d = b.max
		} else {
			d *= 2
		}
	}
	return d
}

// report says whether the failure of delivery n is logged, and at which level. While the
// delay still grows each failure is a WARN: a handful of lines, further and further apart.
// The first delivery at max is an ERROR, the message is stuck until someone looks, and so is
// every remindEvery-th after it; the deliveries between are not logged, so a message that
// can never be stored costs a line an hour, not one a second.
func (b backoff) report(n uint64) (slog.Level, bool) {
	if b.delay(n) < b.max {
		return slog.LevelWarn, true
	}
	capped := uint64(1) // the first delivery whose delay is max
	for b.delay(capped) < b.max {
		capped++
	}
	return slog.LevelError, (n-capped)%remindEvery == 0 // delay is non-decreasing: n ≥ capped
}
