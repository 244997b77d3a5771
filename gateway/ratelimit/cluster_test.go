package ratelimit

import (
	"context"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestRedisClusterAtomic: three limiters, each with its own ClusterClient, 1,000 concurrent
// requests against a 100-token bucket on a three-master cluster → exactly 100 allowed; and
// three rules of one user, on one slot, still in one script call.
func TestRedisClusterAtomic(t *testing.T) {
	rc := testkit.StartRedisCluster(t)
	replicas := []*Redis{NewRedis(rc.Client()), NewRedis(rc.Client()), NewRedis(rc.Client())}
	tests := []struct {
		name string
		reqs []Request
		want int
	}{
		{"one bucket", []Request{{Rule: Rule{ID: "atomic", Algorithm: TokenBucket, Limit: 100, Window: time.Hour}, Key: "user:42"}}, 100},
		{"three rules on one slot", []Request{
			{Rule: Rule{ID: "a", Algorithm: TokenBucket, Limit: 100, Window: time.Hour}, Key: "user:43"},
			{Rule: Rule{ID: "b", Algorithm: GCRA, Limit: 1000, Window: time.Hour}, Key: "user:43"},
			{Rule: Rule{ID: "c", Algorithm: FixedWindow, Limit: 1000, Window: time.Hour}, Key: "{user:43}:route:holds"},
		}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if calls := replicas[0].split(storageKeys(tt.reqs)); len(calls) != 1 {
				t.Fatalf("split into %d script calls, want 1", len(calls))
			}
			if got := hammer(t, replicas, tt.reqs, 1000); got != tt.want {
				t.Errorf("allowed %d of 1000, want exactly %d", got, tt.want)
			}
		})
	}
}

// TestRedisClusterSplitSlotsOvershoot measures the overshoot of rules whose keys fall in
// different slots: the per-IP call denies, but the per-user call in another slot has already
// spent. Each denied request spends its cost once from the other slot's rule, no more.
func TestRedisClusterSplitSlotsOvershoot(t *testing.T) {
	rc := testkit.StartRedisCluster(t)
	store := NewRedis(rc.Client())
	ctx := context.Background()
	perUser := Rule{ID: "per-user", Algorithm: FixedWindow, Limit: 1000, Window: time.Hour}
	perIP := Rule{ID: "per-ip", Algorithm: FixedWindow, Limit: 10, Window: time.Hour}
	reqs := []Request{{Rule: perUser, Key: "user:1"}, {Rule: perIP, Key: "ip:10.0.0.1"}}
	if calls := store.split(storageKeys(reqs)); len(calls) != 2 {
		t.Fatalf("split into %d script calls, want 2 (the test needs two slots)", len(calls))
	}
	const n = 50
	allowed := 0
	var last Result
	for range n {
		res, err := store.Allow(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			allowed++
		}
		last = res
	}
	if allowed != 10 {
		t.Fatalf("allowed %d of %d, want 10 (the per-IP limit)", allowed, n)
	}
	spent := perUser.Limit - last.Rules[0].Remaining
	if overshoot, denied := spent-allowed, n-allowed; overshoot != denied {
		t.Errorf("per-user spent %d for %d allowed requests: overshoot %d, want %d (one per denied request)", spent, allowed, overshoot, denied)
	}
}

// storageKeys are the storage keys of reqs, as Redis.Allow splits them.
func storageKeys(reqs []Request) []string {
	keys := make([]string, len(reqs))
	for i, q := range reqs {
		keys[i] = storageKey(q.Rule.ID, q.Key)
	}
	return keys
}

// TestRedisClusterHierarchy: a three-level chain lands on its root's slot, in one script call
// beside a flat rule of another slot, and holds under 1,000 concurrent requests on a cluster:
// the platform of 100 passes all of it but its reserve of 5.
func TestRedisClusterHierarchy(t *testing.T) {
	rc := testkit.StartRedisCluster(t)
	replicas := []*Redis{NewRedis(rc.Client()), NewRedis(rc.Client()), NewRedis(rc.Client())}
	platform := Rule{ID: "c-platform", Algorithm: GCRA, Limit: 100, Window: time.Hour, Level: &Level{Reserve: 5}}
	plan := Rule{ID: "c-plan", Algorithm: TokenBucket, Limit: 40, Window: time.Hour, Level: &Level{Parent: platform.ID, Ceiling: 100, Reserve: 3}}
	tenant := Rule{ID: "c-tenant", Algorithm: TokenBucket, Limit: 15, Window: time.Hour, Level: &Level{Parent: plan.ID, Ceiling: 100}}
	perIP := Rule{ID: "c-ip", Algorithm: FixedWindow, Limit: 10_000, Window: time.Hour}
	reqs := []Request{{Rule: tenant, Key: "tenant:t1"}, {Rule: perIP, Key: "ip:10.0.0.9"}, {Rule: plan, Key: "plan:p1"}, {Rule: platform, Key: "global"}}
	keys, _ := chainKeys(reqs, parents(reqs))
	calls := replicas[0].split(keys)
	if len(calls) != 2 {
		t.Fatalf("split into %d script calls, want 2: the chain and the per-IP rule", len(calls))
	}
	for _, c := range calls {
		if n := len(c.reqs); n != 1 && n != 3 {
			t.Errorf("a call decides %d requests, want the chain's 3 or the flat rule alone", n)
		}
	}
	if got := hammer(t, replicas, reqs, 1000); got != 95 {
		t.Errorf("allowed %d of 1000 through a platform of 100 with a reserve of 5, want exactly 95", got)
	}
}
