package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// maxBatch caps the requests of one pipeline, so that one round trip's write, its server
// time and its reply stay small next to the deadlines of the requests in it.
const maxBatch = 128

// defaultSlots is K, the pipelines a Redis keeps in flight before requests queue: one per
// processor. The client's work on a round trip (writing the commands, reading the reply) runs
// on the goroutine that sends it, so K = GOMAXPROCS lets every processor send or read one
// batch while Redis, single-threaded, runs another; more slots would not add throughput,
// only split the queue into smaller batches and bring back the per-request costs batching
// saves. At least 2, so that a request never waits behind a single slow round trip alone.
func defaultSlots() int { return max(2, runtime.GOMAXPROCS(0)) }

// batcher groups the script calls of concurrent decisions into pipelines (group commit,
// docs/lessons/distributed.md). A request that finds a free slot sends at once, alone; the
// others queue, and a round trip that ends hands its slot to drain, which sends the queue in
// pipelines of up to maxBatch. A queued request returns when its own context ends, even
// mid-batch (Failsafe counts on that, see boundByDeadline). The zero value sends every
// request alone. Safe for concurrent use.
type batcher struct {
	// slots is K, the most round trips in flight; 0 means no batching.
	slots int
	sizes metric.Int64Histogram

	mu       sync.Mutex
	inFlight int
	queue    []*waiter
}

// waiter is a queued request: its calls, and where it learns how they went.
type waiter struct {
	ctx   context.Context
	calls []scriptCall
	one   [1]scriptCall // calls' array in the usual case, one call
	// done receives the request's error, nil once its calls hold their replies. Buffered:
	// drain never waits for a request that has given up.
	done chan error
	// sent is set when the request's calls leave; gaveUp when it stopped waiting for that.
	sent, gaveUp atomic.Bool
}

// send sends one request's script calls, at once if a slot is free, else with the next
// batch, and leaves their replies in them. It returns the first error of the calls, ctx's
// error if ctx ends first, or ErrNoSlot if the budget in ctx (withBudget) for the wait for a
// slot runs out: waiting is not taken for the store's time.
func (r *Redis) send(ctx context.Context, calls []scriptCall) error {
	b := &r.batch
	if b.slots == 0 {
		return r.runWithin(ctx, calls)
	}
	b.mu.Lock()
	if b.inFlight < b.slots {
		b.inFlight++
		b.mu.Unlock()
		b.sizes.Record(ctx, 1)
		err := r.runWithin(ctx, calls)
		if next := b.next(); next != nil {
			go r.drain(next)
		}
		return err
	}
	// A copy, so that calls, the caller's, stays on its stack when the request goes alone.
	w := &waiter{ctx: ctx, done: make(chan error, 1)}
	w.calls = append(w.one[:0], calls...)
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	var queued <-chan time.Time
	if bu := budgetOf(ctx); bu != nil {
		t := time.NewTimer(bu.queueWait)
		defer t.Stop()
		queued = t.C
	}
	for {
		select {
		case err := <-w.done:
			copy(calls, w.calls)
			return err
		case <-ctx.Done():
			if !w.sent.Load() {
				return fmt.Errorf("%w: %w", ErrNoSlot, ctx.Err())
			}
			return ctx.Err()
		case <-queued:
			if !w.sent.Load() {
				w.gaveUp.Store(true)
				if !w.sent.Load() { // flush checks gaveUp after setting sent
					return ErrNoSlot
				}
			}
			queued = nil // on its way: wait for its round trip's own deadline
		}
	}
}

// runWithin is run bounded by ctx's round-trip budget, counted from now.
func (r *Redis) runWithin(ctx context.Context, calls []scriptCall) error {
	if bu := budgetOf(ctx); bu != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bu.roundTrip)
		defer cancel()
	}
	return r.run(ctx, calls)
}

// ErrNoSlot is a store call that never left: it waited too long for a round trip slot. It
// says nothing about the store, only that the caller was busy.
var ErrNoSlot = errors.New("ratelimit: no store round trip in time")

// budget bounds a store call: the wait for a round trip slot, and the round trip itself
// from the moment it is written.
type budget struct{ roundTrip, queueWait time.Duration }

type budgetKey struct{}

// withBudget gives the calls made with ctx the budget b; b is shared, not copied.
func withBudget(ctx context.Context, b *budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetOf(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// next takes the queued requests, at most maxBatch, for the slot of a round trip that just
// ended, or frees the slot and returns nil if none are queued.
func (b *batcher) next() []*waiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.inFlight--
		return nil
	}
	if len(b.queue) <= maxBatch {
		batch := b.queue
		b.queue = nil
		return batch
	}
	batch := b.queue[:maxBatch:maxBatch]
	b.queue = slices.Clone(b.queue[maxBatch:])
	return batch
}

// drain sends batches on one slot until no request is queued, then frees the slot.
func (r *Redis) drain(batch []*waiter) {
	for ; batch != nil; batch = r.batch.next() {
		r.flush(batch)
	}
}

// flush sends the calls of a batch's requests in one pipeline and tells each request how its
// own calls went: an error in one call fails its request only.
func (r *Redis) flush(batch []*waiter) {
	// A request that gave up before the batch left is not sent: its decision would spend
	// budget that nobody uses.
	live := batch[:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.done <- err
			continue
		}
		if w.sent.Store(true); w.gaveUp.Load() {
			w.done <- ErrNoSlot
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := batchDeadline(live)
	defer cancel()
	r.batch.sizes.Record(ctx, int64(len(live)))
	groups := make([][]scriptCall, len(live))
	for i, w := range live {
		groups[i] = w.calls
	}
	r.pipeline(ctx, groups...)
	for _, w := range live {
		w.done <- callsErr(w.calls)
	}
}

// batchDeadline is the context of a batch's round trip. It ends at the latest of its
// requests' bounds, so that one short bound does not fail the others' calls (each request
// still returns at its own): a request's bound is its round-trip budget from now when it has
// one, else its deadline. It never ends if a request has neither. It carries no values: the
// batch belongs to no one request.
func batchDeadline(batch []*waiter) (context.Context, context.CancelFunc) {
	var latest time.Time
	now := time.Now()
	for _, w := range batch {
		d, ok := w.ctx.Deadline()
		if bu := budgetOf(w.ctx); bu != nil {
			d, ok = now.Add(bu.roundTrip), true
		}
		if !ok {
			return context.Background(), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// pipeline sends the calls of groups in one pipeline, which a Cluster client splits by node
// by itself. Calls whose script the server does not know are sent again, together, with the
// source. Each call's cmd holds its own reply or error.
func (r *Redis) pipeline(ctx context.Context, groups ...[]scriptCall) {
	p := r.client.Pipeline()
	for _, calls := range groups {
		for c := range calls {
			calls[c].cmd = newScriptCmd(ctx, calls[c].args)
			_ = p.Process(ctx, calls[c].cmd)
		}
	}
	if _, err := p.Exec(ctx); err == nil || !anyUnknownScript(groups) {
		return
	}
	// Some server lacks the script: send the source to those calls, once.
	for _, calls := range groups {
		for c := range calls {
			if unknownScript(calls[c].cmd.Err()) {
				calls[c].withSource(ctx)
				_ = p.Process(ctx, calls[c].cmd)
			}
		}
	}
	_, _ = p.Exec(ctx)
}

// anyUnknownScript reports whether a call of groups was answered NOSCRIPT.
func anyUnknownScript(groups [][]scriptCall) bool {
	for _, calls := range groups {
		for c := range calls {
			if unknownScript(calls[c].cmd.Err()) {
				return true
			}
		}
	}
	return false
}

// callsErr is the first error among the replies of calls.
func callsErr(calls []scriptCall) error {
	for c := range calls {
		if err := calls[c].cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}
