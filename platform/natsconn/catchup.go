package natsconn

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
)

// The pauses between failed catch-up passes: the first, and the longest the doubling reaches.
const (
	catchUpFirstPause = 100 * time.Millisecond
	catchUpMaxPause   = 5 * time.Second
)

// CatchUp keeps a follower of a stream level with the stream's source (the catalog, read over
// its API), which still has what a bounded stream dropped or a new consumer never got: after
// each set-up of the consumer, Pass reads the source whole and applies it as events. Stream
// and pass may bring one record twice, in any order, so applying must be idempotent and never
// let an older version undo a newer one (docs/adr/0005-nats-jetstream-for-events.md). Set the
// fields, then call Follow or Once from one goroutine.
type CatchUp struct {
	// Pass reads the source and applies what it holds, returning how many records it
	// applied; an error fails the pass, which starts again after a pause. Required.
	Pass func(ctx context.Context) (applied int, err error)
	// Source names what Pass reads, for the log: "the catalog".
	Source string
	// Report, if set, is called after each pass with how many records it applied and its
	// error, nil once the pass is complete: for a follower to count passes or turn ready. A
	// pass cut short by ctx ending is not reported.
	Report func(ctx context.Context, applied int, err error)
	// Log receives each pass's outcome; nil discards them.
	Log *slog.Logger

	once  sync.Once
	asked chan struct{}
}

// Follow is Follow (the package function) with a pass after each set-up of the consumer; o's
// Subscribed is replaced. Set-ups while a pass waits to start make one pass, and a set-up
// during a pass makes one more after it. With a nil js there is no stream to follow: Follow
// makes one pass and returns. Otherwise it returns once ctx has ended and the consumer has
// stopped.
func (c *CatchUp) Follow(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, handle jetstream.MessageHandler, o FollowOptions) {
	if js == nil {
		_, _ = c.Once(ctx) // fails only when ctx ends
		return
	}
	o.Subscribed = c.ask
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		Follow(ctx, js, stream, cfg, handle, o)
	}()
	for {
		select {
		case <-c.pending():
		case <-ctx.Done():
			<-followed
			return
		}
		if _, err := c.Once(ctx); err != nil {
			<-followed
			return
		}
	}
}

// ask requests a pass and returns at once; it holds one request, all a pass needs.
func (c *CatchUp) ask() {
	select {
	case c.pending() <- struct{}{}:
	default:
	}
}

// pending is the channel of requests, made on first use so that the zero CatchUp needs no
// constructor.
func (c *CatchUp) pending() chan struct{} {
	c.once.Do(func() { c.asked = make(chan struct{}, 1) })
	return c.asked
}

// Once makes passes until one is complete, pausing after each failure (100ms, then twice as
// long each time, up to 5s), and returns how many records that pass applied. It gives up only
// when ctx ends, with ctx's error: a follower started before its source waits for it.
func (c *CatchUp) Once(ctx context.Context) (int, error) {
	log := c.Log
	if log == nil {
		log = logging.Discard()
	}
	wait := catchUpFirstPause
	for {
		n, err := c.Pass(ctx)
		if err != nil && ctx.Err() != nil {
			return n, ctx.Err()
		}
		if c.Report != nil {
			c.Report(ctx, n, err)
		}
		if err == nil {
			log.InfoContext(ctx, "caught up with "+c.Source, "applied", n)
			return n, nil
		}
		log.WarnContext(ctx, "catch up with "+c.Source, "error", err, "applied", n, "retry_in", wait.String())
		if err := clock.Sleep(ctx, wait); err != nil {
			return n, err
		}
		wait = min(2*wait, catchUpMaxPause)
	}
}
