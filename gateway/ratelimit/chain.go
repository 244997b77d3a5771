package ratelimit

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"boxoffice.dev/platform/clock"
)

// Options configures the limiter a gateway runs; New builds the whole chain from it. The
// zero value of every field but Client gives the default.
type Options struct {
	// Client is the Redis (or Redis Cluster) the limits live in.
	Client redis.UniversalClient
	// ReplicaID is how this replica announces itself for the fallback's Limit/N; "" means
	// random.
	ReplicaID string
	// Timeout, QueueWait, ClosedTimeout, DenyFor and Breaker are Failsafe's (FailsafeOptions).
	Timeout, QueueWait, ClosedTimeout, DenyFor time.Duration
	Breaker                                    Breaker
	// Clock is the one time source of the chain; the zero Clock is time.Now.
	Clock clock.Clock
	// Meter receives every metric of the chain; nil means none.
	Meter metric.MeterProvider
	// Logger reports breaker changes; nil discards.
	Logger *slog.Logger
}

// Chain is the limiter of a gateway replica, outermost first:
//
//	HotKeys → Approximate → Leases → Sharded → Failsafe → Redis (open lane)
//	                                                    → Redis on connections of its own (fail-closed lane)
//
// Leases sits above Sharded, so a lease's overshoot stays replicas × lease whatever the
// shards (docs/lessons/hot-keys.md); each Redis ends its calls at their context's deadline,
// so Failsafe's budgets hold by themselves. Run runs the background work; Close closes.
type Chain struct {
	*HotKeys
	failsafe *Failsafe
	approx   *Approximate
	stores   []*Redis
	replicas *Replicas
	clients  []redis.UniversalClient
}

// New builds the chain on o.Client.
func New(o Options) (*Chain, error) {
	if o.Client == nil {
		return nil, errors.New("ratelimit: no Redis client")
	}
	id := o.ReplicaID
	if id == "" {
		id = "gateway-" + rand.Text()[:12]
	}
	c := &Chain{replicas: NewReplicas(o.Client, id, 0)}
	open, err := c.store(o, 0)
	if err != nil {
		return nil, err
	}
	// A few connections of its own are enough for logins and sign-ups, and keep them out of
	// the open lane's pool, which a flood fills.
	closed, err := c.store(o, 4)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.failsafe, err = NewFailsafe(open, FailsafeOptions{
		Timeout: o.Timeout, QueueWait: o.QueueWait, ClosedStore: closed, ClosedTimeout: o.ClosedTimeout,
		DenyFor: o.DenyFor, Breaker: o.Breaker, Replicas: c.replicas, Clock: o.Clock, Meter: o.Meter, Logger: o.Logger})
	var leases *Leases
	if err == nil {
		leases, err = NewLeasesWith(NewSharded(c.failsafe, nil), LeasesOptions{Clock: o.Clock, Meter: o.Meter})
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	if err == nil {
		c.approx, err = NewApproximate(leases, o.Client, ApproximateOptions{Clock: o.Clock, Meter: o.Meter})
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	if c.HotKeys, err = NewHotKeys(c.approx, o.Client, HotKeysOptions{Clock: o.Clock, Meter: o.Meter}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// store is a Redis limiter on a copy of o.Client, with a pool of poolSize (0: the client's).
func (c *Chain) store(o Options, poolSize int) (*Redis, error) {
	client, err := deadlineClient(o.Client, poolSize)
	if err != nil {
		return nil, err
	}
	c.clients = append(c.clients, client)
	r, err := NewRedisWith(client, RedisOptions{Meter: o.Meter})
	if err != nil {
		return nil, err
	}
	c.stores = append(c.stores, r)
	return r, nil
}

// deadlineClient copies c into a client that ends each call at its context's deadline
// (ContextTimeoutEnabled). The price: a call cut off at its deadline closes its connection,
// and the next one dials; the breaker stops calls, and so dials, when Redis keeps missing
// the deadline. The copy gets a push processor of its own (nil: a new one), not c's.
func deadlineClient(c redis.UniversalClient, poolSize int) (redis.UniversalClient, error) {
	switch c := c.(type) {
	case *redis.Client:
		o := *c.Options()
		o.ContextTimeoutEnabled, o.PushNotificationProcessor = true, nil
		if poolSize > 0 {
			o.PoolSize, o.MinIdleConns = poolSize, 1
		}
		return redis.NewClient(&o), nil
	case *redis.ClusterClient:
		o := *c.Options()
		o.ContextTimeoutEnabled, o.PushNotificationProcessor = true, nil
		if poolSize > 0 {
			o.PoolSize, o.MinIdleConns = poolSize, 1
		}
		return redis.NewClusterClient(&o), nil
	}
	return nil, errors.New("ratelimit: only a single-server or a Cluster Redis client can be copied")
}

// Warm loads the scripts and dials each lane before the first request, whose decision has
// only the round-trip budget.
func (c *Chain) Warm(ctx context.Context) error {
	var errs []error
	for _, s := range c.stores {
		errs = append(errs, s.Warm(ctx))
	}
	return errors.Join(errs...)
}

// syncTick is how often the chain looks for approximate counts due for a sync; a rule's own
// Sync, at least this, says when.
const syncTick = 10 * time.Millisecond

// Run announces this replica, publishes its hot keys and syncs its approximate counts until
// ctx ends.
func (c *Chain) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.HotKeys.Run(ctx) })
	wg.Go(func() { c.approx.Run(ctx, syncTick) })
	err := c.replicas.Run(ctx)
	wg.Wait()
	return err
}

// BreakerOpen reports whether the open lane's store calls are being skipped.
func (c *Chain) BreakerOpen() bool { return c.failsafe.BreakerOpen() }

// Close closes the chain's Redis clients; o.Client stays the caller's.
func (c *Chain) Close() error {
	var errs []error
	for _, cl := range c.clients {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}
