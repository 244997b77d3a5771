package testkit

import (
	"sync"
	"time"

	"boxoffice.dev/platform/clock"
)

// Clock is a time source a test controls, for code that takes a clock.Clock (Clock) or a
// clock func (Now, as a method value). It stands still until Advance moves it or, with a step, moves on
// by the step at every reading, so rows written one after another get distinct, ordered
// times. It is safe for concurrent use.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// NewClock returns a Clock at start that moves on by step before each reading (0: it only
// moves when advanced).
func NewClock(start time.Time, step time.Duration) *Clock {
	return &Clock{now: start, step: step}
}

// Now moves the clock on by its step and returns the time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// Clock returns a clock.Clock reading c, for a struct's Clock field.
func (c *Clock) Clock() clock.Clock { return clock.Func(c.Now) }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
