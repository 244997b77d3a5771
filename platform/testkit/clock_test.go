package testkit

import (
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func TestClockStandsStillUntilAdvanced(t *testing.T) {
	c := NewClock(t0, 0)
	if a, b := c.Now(), c.Now(); !a.Equal(t0) || !b.Equal(t0) {
		t.Errorf("Now(), Now() = %v, %v; want %v twice", a, b, t0)
	}
	c.Advance(time.Minute)
	if got, want := c.Now(), t0.Add(time.Minute); !got.Equal(want) {
		t.Errorf("Now() after Advance(1m) = %v, want %v", got, want)
	}
}

func TestClockWithAStepOrdersReadings(t *testing.T) {
	c := NewClock(t0, time.Millisecond)
	var mu sync.Mutex
	seen := map[time.Time]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				now := c.Now()
				mu.Lock()
				seen[now] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 400 {
		t.Errorf("400 concurrent readings gave %d distinct times, want 400", len(seen))
	}
	if got, want := c.Now(), t0.Add(401*time.Millisecond); !got.Equal(want) {
		t.Errorf("reading 401 = %v, want %v", got, want)
	}
}

func TestClockClockFollowsTheFake(t *testing.T) {
	c := NewClock(t0, 0)
	cc := c.Clock()
	c.Advance(time.Hour)
	if got, want := cc.Now(), t0.Add(time.Hour); !got.Equal(want) {
		t.Errorf("Clock().Now() after Advance(1h) = %v, want %v", got, want)
	}
}
