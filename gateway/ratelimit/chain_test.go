package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"boxoffice.dev/platform/testkit"
)

// TestDeadlineClient checks the chain's own clients: the same server and options, with calls
// ended at their deadline, so the failsafe needs no goroutine per decision.
func TestDeadlineClient(t *testing.T) {
	base := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6399", DB: 2, PoolSize: 7})
	defer base.Close()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}})
	defer cluster.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:6399"}})
	defer ring.Close()

	for _, tt := range []struct {
		pool, want int
	}{{0, 7}, {4, 4}} {
		got, err := deadlineClient(base, tt.pool)
		if err != nil {
			t.Fatal(err)
		}
		c := got.(*redis.Client)
		defer c.Close()
		if o := c.Options(); !o.ContextTimeoutEnabled || o.Addr != "127.0.0.1:6399" || o.DB != 2 || o.PoolSize != tt.want {
			t.Errorf("deadlineClient(pool %d) options = addr %s db %d pool %d deadline-bound %v; want 127.0.0.1:6399, 2, %d, true",
				tt.pool, o.Addr, o.DB, o.PoolSize, o.ContextTimeoutEnabled, tt.want)
		}
	}
	if base.Options().ContextTimeoutEnabled {
		t.Errorf("deadlineClient changed the options of the client it copied")
	}
	got, err := deadlineClient(cluster, 0)
	if err != nil {
		t.Fatal(err)
	}
	cc := got.(*redis.ClusterClient)
	defer cc.Close()
	if o := cc.Options(); !o.ContextTimeoutEnabled || len(o.Addrs) != 2 {
		t.Errorf("deadlineClient cluster options = %d seeds, deadline-bound %v; want 2, true", len(o.Addrs), o.ContextTimeoutEnabled)
	}
	if _, err := deadlineClient(ring, 0); err == nil {
		t.Errorf("deadlineClient(*redis.Ring) = nil error, want a refusal")
	}
}

// TestChainDecidesOnBothLanes runs the chain New builds on a real redis-server: a fail-open
// and a fail-closed request are each decided by the store, on their own lane.
func TestChainDecidesOnBothLanes(t *testing.T) {
	srv := testkit.StartRedis(t)
	c, err := New(Options{Client: srv.Client(), ReplicaID: "gw-1", Timeout: time.Second, ClosedTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	api := Request{Rule: Rule{ID: "api", Algorithm: TokenBucket, Limit: 2, Window: time.Hour}, Key: "ip:1"}
	login := Request{Rule: Rule{ID: "login", Algorithm: GCRA, Limit: 2, Window: time.Hour, OnStoreFailure: FailClosed}, Key: "ip:1"}
	for _, q := range []Request{api, login} {
		for i, want := range []bool{true, true, false} {
			res, err := c.Allow(ctx, []Request{q})
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed != want || res.Path != PathStore {
				t.Errorf("%s request %d: allowed %v path %s, want %v store", q.Rule.ID, i+1, res.Allowed, res.Path, want)
			}
		}
	}
	if n := c.failsafe.closed.store.(*Redis); n == c.failsafe.open.store.(*Redis) {
		t.Errorf("the closed lane shares the open lane's store, want one of its own")
	}
}
