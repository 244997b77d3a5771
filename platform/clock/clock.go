// Package clock holds what BoxOffice code needs from time beyond package time: a pause that
// ends early when its context does, for retry loops and pacing.
package clock

import (
	"context"
	"time"
)

// Sleep pauses for d, or until ctx is done, whichever comes first. It returns nil after the
// whole pause and ctx.Err() when cut short, so a loop can stop on it:
//
//	if clock.Sleep(ctx, backoff) != nil {
//		return nil // shutting down
//	}
//
// d <= 0 returns at once, with ctx.Err().
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
