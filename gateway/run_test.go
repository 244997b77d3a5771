package gateway

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestLimiterClient checks the limiter's own client: the same server and options, with calls
// ended at their deadline, so the failsafe needs no goroutine per decision.
func TestLimiterClient(t *testing.T) {
	base := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6399", DB: 2, PoolSize: 7})
	defer base.Close()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}})
	defer cluster.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:6399"}})
	defer ring.Close()

	c, ok := limiterClient(base).(*redis.Client)
	if !ok {
		t.Fatalf("limiterClient(*redis.Client) = %T, want a *redis.Client", limiterClient(base))
	}
	defer c.Close()
	if o := c.Options(); !o.ContextTimeoutEnabled || o.Addr != "127.0.0.1:6399" || o.DB != 2 || o.PoolSize != 7 {
		t.Errorf("limiterClient options = addr %s db %d pool %d deadline-bound %v; want 127.0.0.1:6399, 2, 7, true",
			o.Addr, o.DB, o.PoolSize, o.ContextTimeoutEnabled)
	}
	if base.Options().ContextTimeoutEnabled {
		t.Errorf("limiterClient changed the options of the client it copied")
	}

	cc, ok := limiterClient(cluster).(*redis.ClusterClient)
	if !ok {
		t.Fatalf("limiterClient(*redis.ClusterClient) = %T, want a *redis.ClusterClient", limiterClient(cluster))
	}
	defer cc.Close()
	if o := cc.Options(); !o.ContextTimeoutEnabled || len(o.Addrs) != 2 {
		t.Errorf("limiterClient cluster options = %d seeds, deadline-bound %v; want 2, true", len(o.Addrs), o.ContextTimeoutEnabled)
	}

	if got := limiterClient(ring); got != nil {
		t.Errorf("limiterClient(*redis.Ring) = %T, want nil (the caller keeps its client)", got)
	}
}
