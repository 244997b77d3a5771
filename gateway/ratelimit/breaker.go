package ratelimit

import (
	"sync"
	"time"
)

// Breaker configures the circuit breaker around the store; the zero value gives the defaults.
// It judges only the store's own round trips, never the gateway's queue, and opens on a
// failure ratio over a rolling window (so a few slow answers under load do not open it), or
// at once after a few calls in a row found the store unreachable. docs/lessons/failure-modes.md,
// "A circuit breaker that judges Redis by a ratio, not by a streak", walks through the states.
type Breaker struct {
	// Ratio is the share of failed calls over Window that opens the breaker; 0 means 0.5.
	Ratio float64
	// MinCalls is the fewest calls over Window for Ratio to be judged; 0 means 20.
	MinCalls int
	// Window is the rolling window the ratio is computed over; 0 means 2s.
	Window time.Duration
	// Unreachable is how many consecutive calls that could not reach the store (refused,
	// reset) open the breaker whatever the volume; 0 means 3.
	Unreachable int
	// OpenFor is how long the breaker stays open before probing the store; 0 means 1s.
	OpenFor time.Duration
	// Probes is how many calls half-open lets through, all of which must succeed to close;
	// 0 means 3.
	Probes int
}

func (b Breaker) withDefaults() Breaker {
	if b.Ratio <= 0 || b.Ratio > 1 {
		b.Ratio = 0.5
	}
	if b.MinCalls <= 0 {
		b.MinCalls = 20
	}
	if b.Window <= 0 {
		b.Window = 2 * time.Second
	}
	if b.Unreachable <= 0 {
		b.Unreachable = 3
	}
	if b.OpenFor <= 0 {
		b.OpenFor = time.Second
	}
	if b.Probes <= 0 {
		b.Probes = 3
	}
	return b
}

// BreakerState is where a breaker stands.
type BreakerState int

// The breaker's states.
const (
	// Closed: calls go to the store.
	Closed BreakerState = iota
	// Open: calls are skipped; the store is judged unavailable until OpenFor has passed.
	Open
	// HalfOpen: a few probe calls go to the store; the rest are skipped.
	HalfOpen
)

func (s BreakerState) String() string {
	switch s {
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "closed"
}

// callOutcome is how one store call went, as the breaker counts it.
type callOutcome int

const (
	callOK          callOutcome = iota
	callSlow                    // answered too late, or errored after reaching the store
	callUnreachable             // could not reach the store at all
	callNotCounted              // never reached the store through no fault of its own
)

// breakerBuckets is how many slices the rolling window is cut into.
const breakerBuckets = 10

// windowSlice counts the calls of one slice of the rolling window.
type windowSlice struct {
	start       time.Time
	calls, fail int
}

// circuit is the breaker's state machine. Safe for concurrent use.
type circuit struct {
	cfg      Breaker
	now      func() time.Time
	onChange func(from, to BreakerState, why string)

	mu          sync.Mutex
	state       BreakerState
	openedAt    time.Time
	probes      int // calls let through while half-open and not yet answered
	passed      int // probes answered successfully while half-open
	unreachable int // consecutive calls that could not reach the store
	buckets     [breakerBuckets]windowSlice
}

func newCircuit(cfg Breaker, now func() time.Time, onChange func(from, to BreakerState, why string)) *circuit {
	return &circuit{cfg: cfg.withDefaults(), now: now, onChange: onChange}
}

// allow reports whether a call may go to the store now.
func (c *circuit) allow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case Open:
		if c.now().Sub(c.openedAt) < c.cfg.OpenFor {
			return false
		}
		c.set(HalfOpen, "probing the store")
		c.probes, c.passed = 0, 0
		fallthrough
	case HalfOpen:
		if c.probes+c.passed >= c.cfg.Probes {
			return false
		}
		c.probes++
		return true
	}
	return true
}

// done records how a call that allow let through went.
func (c *circuit) done(o callOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o == callNotCounted {
		if c.state == HalfOpen {
			c.probes--
		}
		return
	}
	if c.state == HalfOpen {
		c.probes--
		if o != callOK {
			c.trip("a probe failed")
			return
		}
		if c.passed++; c.passed >= c.cfg.Probes {
			c.set(Closed, "probes answered")
			c.reset()
		}
		return
	}
	if c.state != Closed {
		return // a call from before the breaker opened
	}
	b := c.bucket()
	b.calls++
	switch o {
	case callOK:
		c.unreachable = 0
		return
	case callUnreachable:
		c.unreachable++
	}
	b.fail++
	if c.unreachable >= c.cfg.Unreachable {
		c.trip("store unreachable")
		return
	}
	calls, fail := c.totals()
	if calls >= c.cfg.MinCalls && float64(fail) >= c.cfg.Ratio*float64(calls) {
		c.trip("too many slow or failed calls")
	}
}

// current reports the state, moving from Open to HalfOpen when OpenFor has passed.
func (c *circuit) current() BreakerState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == Open && c.now().Sub(c.openedAt) >= c.cfg.OpenFor {
		return HalfOpen
	}
	return c.state
}

func (c *circuit) trip(why string) {
	c.openedAt = c.now()
	c.set(Open, why)
	c.reset()
}

func (c *circuit) set(to BreakerState, why string) {
	from := c.state
	c.state = to
	if c.onChange != nil && from != to {
		c.onChange(from, to, why)
	}
}

func (c *circuit) reset() {
	c.unreachable = 0
	c.buckets = [breakerBuckets]windowSlice{}
}

// bucket is the slice of the rolling window that now falls in, emptied if it held an older
// slice's counts.
func (c *circuit) bucket() *windowSlice {
	width := c.cfg.Window / breakerBuckets
	now := c.now()
	start := now.Truncate(width)
	b := &c.buckets[(start.UnixNano()/int64(width))%breakerBuckets]
	if !b.start.Equal(start) {
		b.start, b.calls, b.fail = start, 0, 0
	}
	return b
}

// totals adds up the slices still inside the window.
func (c *circuit) totals() (calls, fail int) {
	oldest := c.now().Add(-c.cfg.Window)
	for _, b := range c.buckets {
		if b.start.After(oldest) {
			calls += b.calls
			fail += b.fail
		}
	}
	return calls, fail
}
