package ratelimit

import (
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

func TestBreakerOpensOnRatioNotOnAFewSlowCalls(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	c := newCircuit(Breaker{MinCalls: 10, Ratio: 0.5, Window: time.Second}, clk.Now, nil)
	// 9 slow calls of 9: below the minimum volume, so a quiet moment's hiccups do not open it.
	for range 9 {
		call(t, c, callSlow)
	}
	if got := c.current(); got != Closed {
		t.Fatalf("after 9 slow calls of 9 (under MinCalls 10): %v, want closed", got)
	}
	// The 10th reaches the volume with 10 of 10 failed.
	call(t, c, callSlow)
	if got := c.current(); got != Open {
		t.Fatalf("after 10 slow calls of 10: %v, want open", got)
	}
}

func TestBreakerJudgesTheWindowOnly(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	c := newCircuit(Breaker{MinCalls: 10, Ratio: 0.5, Window: time.Second}, clk.Now, nil)
	for range 8 {
		call(t, c, callSlow)
	}
	clk.Advance(2 * time.Second) // those fall out of the window
	for range 6 {
		call(t, c, callOK)
	}
	for range 4 {
		call(t, c, callSlow)
	}
	if got := c.current(); got != Closed {
		t.Fatalf("4 slow of 10 in the window (8 older ones outside it): %v, want closed", got)
	}
	call(t, c, callSlow) // 5 of 11 is under half
	call(t, c, callSlow) // 6 of 12 is half
	if got := c.current(); got != Open {
		t.Fatalf("6 slow of 12 in the window: %v, want open", got)
	}
}

func TestBreakerOpensAtOnceOnAnUnreachableStore(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	c := newCircuit(Breaker{Unreachable: 3}, clk.Now, nil)
	call(t, c, callUnreachable)
	call(t, c, callUnreachable)
	call(t, c, callOK) // an answer in between: not dead
	call(t, c, callUnreachable)
	call(t, c, callUnreachable)
	if got := c.current(); got != Closed {
		t.Fatalf("2 unreachable in a row: %v, want closed", got)
	}
	call(t, c, callUnreachable)
	if got := c.current(); got != Open {
		t.Fatalf("3 unreachable in a row: %v, want open", got)
	}
}

func TestBreakerDoesNotCountCallsThatNeverLeft(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	c := newCircuit(Breaker{MinCalls: 5}, clk.Now, nil)
	for range 100 {
		call(t, c, callNotCounted)
	}
	if got := c.current(); got != Closed {
		t.Fatalf("100 calls that waited for a slot and never reached the store: %v, want closed", got)
	}
}

func TestBreakerHalfOpenProbes(t *testing.T) {
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0), 0)
	var changes []string
	c := newCircuit(Breaker{Unreachable: 1, OpenFor: time.Second, Probes: 2}, clk.Now, func(from, to BreakerState, _ string) {
		changes = append(changes, from.String()+"→"+to.String())
	})
	call(t, c, callUnreachable)
	if c.allow() {
		t.Fatal("allow() while open = true, want false")
	}
	clk.Advance(time.Second)
	if got := c.current(); got != HalfOpen {
		t.Fatalf("after OpenFor: %v, want half-open", got)
	}
	// Two probes go; a third waits for them.
	for i := range 2 {
		if !c.allow() {
			t.Fatalf("half-open refused probe %d of 2", i+1)
		}
	}
	if c.allow() {
		t.Fatal("half-open let a 3rd call through with 2 probes out")
	}
	c.done(callOK)
	c.done(callSlow) // one probe fails: open again
	if got := c.current(); got != Open {
		t.Fatalf("a failed probe: %v, want open", got)
	}
	clk.Advance(time.Second)
	call(t, c, callOK)
	call(t, c, callOK)
	if got := c.current(); got != Closed {
		t.Fatalf("2 probes answered: %v, want closed", got)
	}
	want := []string{"closed→open", "open→half-open", "half-open→open", "open→half-open", "half-open→closed"}
	if len(changes) != len(want) {
		t.Fatalf("state changes %v, want %v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Fatalf("state changes %v, want %v", changes, want)
		}
	}
}

// call makes one call through c that ends with o; it must be let through.
func call(t *testing.T, c *circuit, o callOutcome) {
	t.Helper()
	if !c.allow() {
		t.Fatalf("allow() = false in state %v, want a call let through", c.current())
	}
	c.done(o)
}
