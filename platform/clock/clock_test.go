package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"boxoffice.dev/platform/clock"
)

func TestSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"the whole pause", context.Background(), time.Millisecond, nil},
		{"no pause", context.Background(), 0, nil},
		{"cut short by the context", cancelled, time.Hour, context.Canceled},
		{"no pause on a done context", cancelled, 0, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A cut-short hour must return well within the test's timeout.
			if err := clock.Sleep(tt.ctx, tt.d); !errors.Is(err, tt.want) {
				t.Errorf("Sleep(%v) = %v, want %v", tt.d, err, tt.want)
			}
		})
	}
}

func TestSleepWaitsTheWholePause(t *testing.T) {
	const d = 20 * time.Millisecond
	start := time.Now()
	if err := clock.Sleep(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got < d {
		t.Errorf("Sleep(%v) returned after %v, want at least %v", d, got, d)
	}
}

func TestClockNow(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := clock.Func(func() time.Time { return t0 }).Now(); !got.Equal(t0) {
		t.Errorf("Func(t0).Now() = %v, want %v", got, t0)
	}
	// The zero Clock is the system clock: its reading lies between two of time.Now.
	before := time.Now()
	got := clock.Clock{}.Now()
	if after := time.Now(); got.Before(before) || got.After(after) {
		t.Errorf("Clock{}.Now() = %v, want between %v and %v", got, before, after)
	}
	if got := clock.Func(nil).Now(); got.IsZero() {
		t.Errorf("Func(nil).Now() = %v, want the system time", got)
	}
}
