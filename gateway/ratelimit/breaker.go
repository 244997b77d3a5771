package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Breaker configures the circuit breaker around the store. The zero value gives the
// defaults: open after 5 consecutive failures, try the store again after 1s.
//
// Why a breaker on top of a 5 ms timeout: without it, every request during an outage waits
// the full timeout before falling back, adding 5 ms to all traffic and piling connection
// attempts on a store that is trying to come back. Open, the breaker makes the fallback
// immediate; half-open, it lets one request probe the store.
type Breaker struct {
	// Failures is how many consecutive failed calls open the breaker; 0 means 5.
	Failures int
	// OpenFor is how long the breaker stays open before probing the store; 0 means 1s.
	OpenFor time.Duration
}

func (b Breaker) openFor() time.Duration {
	if b.OpenFor <= 0 {
		return time.Second
	}
	return b.OpenFor
}

// newBreaker builds the gobreaker state machine for store calls. A call abandoned because
// the caller gave up (context.Canceled) says nothing about the store and is not counted.
func newBreaker(b Breaker, log *slog.Logger) *gobreaker.CircuitBreaker[Result] {
	failures := uint32(5)
	if b.Failures > 0 {
		failures = uint32(b.Failures)
	}
	return gobreaker.NewCircuitBreaker[Result](gobreaker.Settings{
		Name:        "ratelimit-store",
		MaxRequests: 1,
		Timeout:     b.openFor(),
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsExcluded:  func(err error) bool { return errors.Is(err, context.Canceled) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			log.Warn("rate limit store breaker", "from", from.String(), "to", to.String())
		},
	})
}
