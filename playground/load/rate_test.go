package load

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// A rate that is not a number from 0 to MaxRate ends its stream with ErrRate before any
// arrival, whatever sets it (a knob, a ramp): Inf, NaN or 1e9 would otherwise schedule
// arrivals with no gap between them until the run's arrival bound is spent.
func TestRateOutOfRangeStopsTheStream(t *testing.T) {
	for _, rate := range []float64{math.Inf(1), math.NaN(), 1e9, MaxRate + 1} {
		t.Run(strconv.FormatFloat(rate, 'g', -1, 64), func(t *testing.T) {
			clock := newFakeClock()
			e := &Engine{Now: clock.now, Sleep: clock.sleep, MaxArrivals: 1000}
			var arrivals atomic.Int64
			err := e.Run(context.Background(), 10*time.Second, Stream{Name: "s", Rate: func(time.Duration) float64 { return rate },
				Job: func(context.Context, *Client, int64) { arrivals.Add(1) }})
			if !errors.Is(err, ErrRate) || arrivals.Load() != 0 {
				t.Errorf("Run at %g/s = %v after %d arrivals, want ErrRate after none", rate, err, arrivals.Load())
			}
		})
	}
}

// The rates at the edges of the range schedule as a rate should: MaxRate runs, and a rate
// so small that one gap overflows a Duration sends nothing rather than a flood.
func TestRateAtTheEdgesOfTheRange(t *testing.T) {
	tests := []struct {
		name     string
		rate     float64
		poisson  bool
		min, max int64
	}{
		{"MaxRate for 1s", MaxRate, false, MaxRate, MaxRate},
		{"1e-300/s", 1e-300, false, 1, 1}, // the first arrival is due at once
		{"1e-300/s, Poisson", 1e-300, true, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			// In-flight bound above the arrivals: on a fake clock no job need end before the next
			// arrival, and a dropped arrival runs no job.
			e := &Engine{Now: clock.now, Sleep: clock.sleep, Poisson: tt.poisson, MaxArrivals: 2 * MaxRate,
				MaxInFlight: 2 * MaxRate, Rand: func() float64 { return 0.5 }}
			var arrivals atomic.Int64
			err := e.Run(context.Background(), time.Second, Stream{Name: "s", Rate: func(time.Duration) float64 { return tt.rate },
				Job: func(context.Context, *Client, int64) { arrivals.Add(1) }})
			if err != nil || arrivals.Load() < tt.min || arrivals.Load() > tt.max {
				t.Errorf("Run at %g/s for 1s = %v after %d arrivals, want nil after %d..%d", tt.rate, err, arrivals.Load(), tt.min, tt.max)
			}
		})
	}
}
