package payment

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"boxoffice.dev/platform/clock"
)

// LateAnswers makes a share of charges answer late, after the money was taken: the nastiest
// failure a payment client meets, since a caller that times out cannot tell it from a charge
// that never happened. The control hook's latency and errors strike before the handler runs,
// so nothing is charged; this strikes after. Order's saga settles it with GetCharge. A nil
// *LateAnswers never delays; it is safe for concurrent use.
type LateAnswers struct {
	// Rate is the share of charges answered late, 0..1.
	Rate float64
	// Latency is how late; a caller with a shorter deadline gives up first.
	Latency time.Duration

	mu   sync.Mutex
	rand *rand.Rand
}

// NewLateAnswers delays rate of the answers by latency, drawing from a source seeded with
// seed, so a test run with the same seed delays the same calls in the same order.
func NewLateAnswers(rate float64, latency time.Duration, seed uint64) *LateAnswers {
	return &LateAnswers{Rate: rate, Latency: latency, rand: rand.New(rand.NewPCG(seed, seed))}
}

// Wait delays the current answer when it is drawn to be late, or returns at once. It returns
// ctx's error when the caller gave up during the delay.
func (l *LateAnswers) Wait(ctx context.Context) error {
	if l == nil || l.Rate <= 0 {
		return nil
	}
	l.mu.Lock()
	late := l.rand.Float64() < l.Rate
	l.mu.Unlock()
	if !late {
		return nil
	}
	return clock.Sleep(ctx, l.Latency)
}
