package ratelimit

import (
	"boxoffice.dev/platform/clock"

	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// fakeClock is a manual clock for tests, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(at time.Time) *fakeClock { return &fakeClock{t: at} }

// Clock is c as the time source the code under test takes.
func (c *fakeClock) Clock() clock.Clock { return clock.Func(c.Now) }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// epoch is where test traces start: an arbitrary, realistic Unix time in whole seconds.
var epoch = time.Unix(1_750_000_000, 0)

// step is one request of a trace.
type step struct {
	at     time.Duration // since epoch
	key    string
	cost   int
	charge bool // spend after the fact (Request.Charge)
}

// randomTrace draws n requests for rule: gaps around the rule's mean interval (so traces both
// exceed and respect the limit), two keys, and costs mostly 1, sometimes up to beyond the
// limit, and now and then a charge after the fact. Times are whole microseconds.
func randomTrace(rng *rand.Rand, rule Rule, n int) []step {
	mean := max(1, rule.Window.Microseconds()/int64(rule.Limit))
	var at time.Duration
	steps := make([]step, n)
	for i := range steps {
		switch rng.IntN(10) {
		case 0: // a pause long enough for state to reset or expire
			at += time.Duration(rng.Int64N(3*rule.Window.Microseconds()+1)) * time.Microsecond
		case 1, 2: // a burst: same or next microsecond
			at += time.Duration(rng.IntN(2)) * time.Microsecond
		default:
			at += time.Duration(rng.Int64N(2*mean+1)) * time.Microsecond
		}
		cost := 1
		if rng.IntN(4) == 0 {
			cost = 1 + rng.IntN(rule.Limit+1)
		}
		charge := rule.Algorithm != Concurrency && rng.IntN(8) == 0
		steps[i] = step{at: at, key: fmt.Sprintf("client-%d", rng.IntN(2)), cost: cost, charge: charge}
	}
	return steps
}

// replay runs a trace through l on clk and returns each request's decision.
func replay(t *testing.T, l Limiter, clk *fakeClock, rule Rule, steps []step) []Decision {
	t.Helper()
	ds := make([]Decision, len(steps))
	for i, s := range steps {
		clk.Set(epoch.Add(s.at))
		res, err := l.Allow(context.Background(), []Request{{Rule: rule, Key: s.key, Cost: s.cost, Charge: s.charge}})
		if err != nil {
			t.Fatalf("Allow(step %d %+v): %v", i, s, err)
		}
		ds[i] = res.Rules[0]
	}
	return ds
}

// testRules are rules of every algorithm with small limits, so that traces hit them often.
func testRules() []Rule {
	var rules []Rule
	for _, a := range Algorithms {
		rules = append(rules,
			Rule{ID: string(a) + "-small", Algorithm: a, Limit: 3, Window: time.Second},
			Rule{ID: string(a) + "-odd", Algorithm: a, Limit: 7, Window: 1300 * time.Millisecond, Burst: 4},
		)
	}
	return rules
}
