// Package clock holds what BoxOffice code needs from time beyond package time: a Clock to
// inject where code stamps or measures time, and a pause that ends early when its context
// does, for retry loops and pacing.
package clock

import (
	"context"
	"time"
)

// Clock is the time source of code that stamps rows or decides expiry. The zero Clock reads
// time.Now, so a struct holding one needs no constructor; a test builds one with Func from a
// fake it moves by hand (testkit.Clock). A Clock is a value, safe for concurrent use when
// its func is.
type Clock struct {
	now func() time.Time
}

// Func returns a Clock reading now; nil gives the zero Clock (time.Now).
func Func(now func() time.Time) Clock {
	return Clock{now: now}
}

// Now returns the current time of c.
func (c Clock) Now() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

// Sleep pauses for d or until ctx is done: nil after the whole pause, ctx.Err() when cut
// short (at once for d <= 0), so a loop can stop on it: if clock.Sleep(ctx, d) != nil { return }.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
