package notification

import (
	"log/slog"
	"math"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	type step struct {
		delay time.Duration
		level slog.Level
		log   bool
	}
	warn := func(d time.Duration) step { return step{d, slog.LevelWarn, true} }
	errorAt := func(d time.Duration) step { return step{d, slog.LevelError, true} }
	quiet := func(d time.Duration) step { return step{d, slog.LevelError, false} }
	tests := []struct {
		name           string
		first, longest time.Duration
		from           uint64 // the delivery of want[0]
		want           []step
	}{
		{"defaults: 1s doubling to 5 minutes, an ERROR at the cap", 0, 0, 1, []step{
			warn(time.Second), warn(2 * time.Second), warn(4 * time.Second), warn(8 * time.Second),
			warn(16 * time.Second), warn(32 * time.Second), warn(64 * time.Second), warn(128 * time.Second),
			warn(256 * time.Second), errorAt(5 * time.Minute), quiet(5 * time.Minute),
		}},
		{"at the cap, an ERROR every remindEvery deliveries", 0, 0, 10 + remindEvery - 1, []step{
			quiet(5 * time.Minute), errorAt(5 * time.Minute), quiet(5 * time.Minute),
		}},
		{"a cap below first is first", time.Second, time.Millisecond, 1, []step{
			errorAt(time.Second), quiet(time.Second),
		}},
		{"a cap no doubling lands on", 3 * time.Second, 10 * time.Second, 1, []step{
			warn(3 * time.Second), warn(6 * time.Second), errorAt(10 * time.Second),
		}},
		{"a cap near the largest duration does not overflow", time.Hour, math.MaxInt64, 40, []step{
			quiet(math.MaxInt64), quiet(math.MaxInt64),
		}},
		{"delivery 0 (no metadata) waits as the first", time.Second, time.Minute, 0, []step{
			warn(time.Second), warn(time.Second), warn(2 * time.Second),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackoff(tt.first, tt.longest)
			for i, want := range tt.want {
				n := tt.from + uint64(i)
				level, log := b.report(n)
				if got := (step{b.delay(n), level, log}); got.delay != want.delay || got.log != want.log || (want.log && got.level != want.level) {
					t.Errorf("delivery %d: delay, level, logged = %v, %v, %v, want %v, %v, %v", n, got.delay, got.level, got.log, want.delay, want.level, want.log)
				}
			}
		})
	}
}
