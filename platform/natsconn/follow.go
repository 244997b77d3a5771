package natsconn

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
)

// FollowOptions tune Follow. The zero value is usable.
type FollowOptions struct {
	// RetryEvery is the first pause before setting the consumer up again after a failure,
	// doubled after each failure in a row up to MaxRetryEvery; 0 means 1s. MaxRetryEvery 0
	// means 8 × RetryEvery.
	RetryEvery    time.Duration
	MaxRetryEvery time.Duration
	// SetupTimeout bounds one attempt to create or find the consumer; 0 means 5s.
	SetupTimeout time.Duration
	// Subscribed, if set, is called each time the consumer is set up and consuming: a caller
	// that must not go on before events flow (a read model about to rebuild) waits for it.
	Subscribed func()
	// Log reports failed set-ups and a consumer that went away; nil discards.
	Log *slog.Logger
}

// Follow hands every message of stream, through the durable consumer cfg, to handle until
// ctx ends, then stops the consumer and lets the message in hand finish. Setting up is
// retried until it works (the stream may not exist yet, NATS may be away), and a consumer
// that closes while followed is set up again: a service outlives what it listens to.
func Follow(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, handle jetstream.MessageHandler, o FollowOptions) {
	log := cmp.Or(o.Log, logging.Discard()).With("stream", stream, "consumer", cfg.Durable)
	first := cmp.Or(o.RetryEvery, time.Second)
	wait := first
	var inHand handlers
	for {
		cc, err := subscribe(ctx, js, stream, cfg, func(m jetstream.Msg) { inHand.run(m, handle) }, cmp.Or(o.SetupTimeout, 5*time.Second))
		if err == nil {
			wait = first
			if o.Subscribed != nil {
				o.Subscribed()
			}
			select {
			case <-ctx.Done():
				cc.Stop()
				<-cc.Closed()
				inHand.stop() // Closed does not wait for a handler still running
				return
			case <-cc.Closed():
				log.WarnContext(ctx, "consumer closed: setting it up again")
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			log.WarnContext(ctx, "set up consumer", "error", err, "retry_in", wait)
		}
		if clock.Sleep(ctx, wait) != nil {
			return
		}
		wait = min(2*wait, cmp.Or(o.MaxRetryEvery, 8*first))
	}
}

// handlers are the calls of a Follow's handler in progress, so that Follow returns only
// once the message in hand is done: its caller may then close what the handler uses. After
// stop, a message delivered late is left unacknowledged, to be redelivered. The zero value
// is ready; safe for concurrent use.
type handlers struct {
	mu      sync.Mutex
	stopped bool
	running sync.WaitGroup
}

func (h *handlers) run(m jetstream.Msg, handle jetstream.MessageHandler) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.running.Add(1)
	h.mu.Unlock()
	defer h.running.Done()
	handle(m)
}

// stop refuses further calls and waits for the ones in progress.
func (h *handlers) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.running.Wait()
}

// subscribe creates the consumer, or finds it as another replica left it, and consumes it.
func subscribe(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, handle jetstream.MessageHandler, timeout time.Duration) (jetstream.ConsumeContext, error) {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cons, err := js.CreateOrUpdateConsumer(sctx, stream, cfg)
	if err != nil {
		return nil, err
	}
	return cons.Consume(handle)
}
