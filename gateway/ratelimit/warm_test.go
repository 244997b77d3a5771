package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"boxoffice.dev/platform/testkit"
)

// TestWarmLoadsEveryScript checks that Warm leaves the script of every set of algorithms in
// Redis, on every master of a Cluster, so that no first decision meets NOSCRIPT; and that a
// Redis that does not answer is an error for the caller to log, not a hang.
func TestWarmLoadsEveryScript(t *testing.T) {
	var shas []string
	for set := algorithmSet(1); set < 1<<len(Algorithms); set++ {
		s, err := decideScript(set)
		if err != nil {
			t.Fatal(err)
		}
		shas = append(shas, s.sha.(string))
	}
	allLoaded := func(t *testing.T, c *redis.Client) {
		t.Helper()
		exists, err := c.ScriptExists(context.Background(), shas...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range exists {
			if !ok {
				t.Errorf("%s: script %s not loaded after Warm", c.Options().Addr, shas[i])
			}
		}
	}
	ctx := context.Background()

	t.Run("one server", func(t *testing.T) {
		c := testkit.StartRedis(t).Client()
		if err := newRedis(c, nil).Warm(ctx); err != nil {
			t.Fatalf("Warm() = %v", err)
		}
		allLoaded(t, c)
	})
	t.Run("cluster", func(t *testing.T) {
		rc := testkit.StartRedisCluster(t)
		if err := newRedis(rc.Client(), nil).Warm(ctx); err != nil {
			t.Fatalf("Warm() = %v", err)
		}
		for _, n := range rc.Nodes {
			allLoaded(t, n.Client())
		}
	})
	t.Run("no server", func(t *testing.T) {
		// As the gateway makes its limiter's client: calls end at their deadline.
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)), ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		// Warm gives up at once, not when its context ends: a start waits on it.
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second) // the gateway's bound
		defer cancel()
		if err := newRedis(c, nil).Warm(wctx); err == nil {
			t.Error("Warm() with no server = nil, want an error")
		}
		if wctx.Err() != nil {
			t.Error("Warm() with no server waited until its 2 s context ended, want it to give up after one PING")
		}
	})
}
