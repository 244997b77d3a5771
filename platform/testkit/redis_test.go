package testkit

import (
	"context"
	"fmt"
	"testing"
)

func TestRedisStopStart(t *testing.T) {
	r := StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	r.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING after Stop succeeded, want an error")
	}
	r.Start()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
}

func TestRedisClusterSpreadsKeys(t *testing.T) {
	rc := StartRedisCluster(t)
	c := rc.Client()
	ctx := context.Background()
	for i := range 50 {
		if err := c.Set(ctx, fmt.Sprintf("key-%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET key-%d: %v", i, err)
		}
	}
	// Every master should own some of 50 random keys; a single-slot setup would not.
	for _, n := range rc.Nodes {
		got, err := n.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE on %s: %v", n.Addr(), err)
		}
		if got == 0 {
			t.Errorf("node %s holds 0 keys, want some", n.Addr())
		}
	}
}
