package ratelimit

import (
	"context"
	"testing"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/testkit"
)

// approxReplicas are n Approximate limiters on one Redis and one fake clock, each over its
// own in-memory inner limiter, as n gateway replicas would be; with counts, they sync there
// instead of on Redis.
func approxReplicas(t *testing.T, srv *testkit.Redis, counts CountStore, n int, now *time.Time) []*Approximate {
	t.Helper()
	c := clock.Func(func() time.Time { return *now })
	var out []*Approximate
	for range n {
		a, err := NewApproximate(NewMemory(c), srv.Client(), ApproximateOptions{Clock: c, Counts: counts})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// TestApproximateOvershootStaysWithinItsBound: three replicas share a limit of 100 a second,
// synced every 100 ms, each sent 10 requests between two syncs. Each decides on the count it
// read plus its own admissions, blind to the others' since, so the window admits up to
// limit + (replicas-1) × 10 = 120, the stated bound, and no more once the sync shows it
// spent; the next window starts afresh. Under a sliding window the previous window, read
// from the store, still weighs at the next window's start. MemoryCounts, Redis's stand-in in
// the algorithm lab, answers the same.
func TestApproximateOvershootStaysWithinItsBound(t *testing.T) {
	srv := testkit.StartRedis(t)
	ctx := context.Background()
	for _, tc := range []struct {
		alg    Algorithm
		store  string
		counts func() CountStore // nil: Redis
	}{
		{FixedWindow, "redis", nil}, {SlidingCounter, "redis", nil},
		{FixedWindow, "memory", func() CountStore { return &MemoryCounts{} }},
		{SlidingCounter, "memory", func() CountStore { return &MemoryCounts{} }},
	} {
		alg := tc.alg
		t.Run(string(alg)+"/"+tc.store, func(t *testing.T) {
			const replicas, perSync, limit = 3, 10, 100
			now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC).Add(time.Millisecond)
			var counts CountStore
			if tc.counts != nil {
				counts = tc.counts()
			}
			rs := approxReplicas(t, srv, counts, replicas, &now)
			rule := Rule{ID: "approx-" + string(alg), Algorithm: alg, Limit: limit, Window: time.Second, Sync: 100 * time.Millisecond}
			allowed := 0
			rounds := func(n int) {
				for range n {
					for _, r := range rs {
						for range perSync {
							res, err := r.Allow(ctx, []Request{{Rule: rule, Key: "tenant:1"}})
							if err != nil {
								t.Fatal(err)
							}
							if res.Allowed {
								allowed++
							}
							if res.Path != PathApproximate {
								t.Fatalf("path = %s, want %s", res.Path, PathApproximate)
							}
						}
					}
					now = now.Add(100 * time.Millisecond)
					for _, r := range rs {
						if err := r.SyncNow(ctx); err != nil {
							t.Fatalf("SyncNow = %v", err)
						}
					}
				}
			}
			rounds(9) // 0.001 s to 0.901 s: one window
			if bound := limit + (replicas-1)*perSync; allowed < limit || allowed > bound {
				t.Errorf("one window admitted %d, want %d to %d (limit + (replicas-1) × admissions per sync)", allowed, limit, bound)
			}
			if allowed != 120 {
				t.Errorf("one window admitted %d; this trace reaches the bound exactly: 90 after three syncs, then 10 more each", allowed)
			}
			allowed = 0
			now = now.Add(100 * time.Millisecond) // 1.001 s: the next window
			for _, r := range rs {
				if err := r.SyncNow(ctx); err != nil {
					t.Fatal(err)
				}
			}
			rounds(1)
			switch alg {
			case FixedWindow:
				if allowed != replicas*perSync {
					t.Errorf("first sync interval of a new fixed window admitted %d, want %d", allowed, replicas*perSync)
				}
			case SlidingCounter:
				if allowed != 0 {
					t.Errorf("first sync interval of a new sliding window admitted %d, want 0: the previous window's 120, read from the store, still count", allowed)
				}
			}
		})
	}
}

// TestApproximateSpendsNothingOnADeniedRequest: an approximate rule beside an exact one is
// spent only when both allow, and when the approximate rule denies, the exact one is not
// asked.
func TestApproximateSpendsNothingOnADeniedRequest(t *testing.T) {
	srv := testkit.StartRedis(t)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	a := approxReplicas(t, srv, nil, 1, &now)[0]
	ctx := context.Background()
	approx := Rule{ID: "approx", Algorithm: FixedWindow, Limit: 2, Window: time.Minute, Sync: time.Second}
	exact := Rule{ID: "exact", Algorithm: FixedWindow, Limit: 1, Window: time.Minute}
	both := func(key string) Result {
		t.Helper()
		res, err := a.Allow(ctx, []Request{{Rule: approx, Key: "k"}, {Rule: exact, Key: key}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if !both("x").Allowed || both("x").Allowed {
		t.Fatal("want the first request allowed and the second denied by the exact rule")
	}
	// The approximate rule spent 1 of 2: the denied request took nothing.
	if !both("y").Allowed {
		t.Fatal("a third request on a fresh exact key was denied: the denied one spent the approximate rule")
	}
	res := both("z")
	if res.Allowed || res.Rule != "approx" || !res.Rules[1].skipped {
		t.Errorf("after two admissions: %+v; want a denial by approx with exact not asked", res)
	}
	if !both("z").Rules[1].skipped {
		t.Error("exact was asked after approx denied")
	}
}

// TestApproximateKeepsCountsAcrossAFailedSync: a sync while Redis is down fails and keeps the
// counts; the next one, once Redis is back, pushes them.
func TestApproximateKeepsCountsAcrossAFailedSync(t *testing.T) {
	srv := testkit.StartRedis(t)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	a := approxReplicas(t, srv, nil, 1, &now)[0]
	ctx := context.Background()
	rule := Rule{ID: "approx", Algorithm: FixedWindow, Limit: 100, Window: time.Hour, Sync: time.Second}
	for range 7 {
		if _, err := a.Allow(ctx, []Request{{Rule: rule, Key: "k"}}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	now = now.Add(time.Second)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := a.SyncNow(short); err == nil {
		t.Fatal("SyncNow with Redis down = nil, want an error")
	}
	srv.Start()
	if err := a.SyncNow(ctx); err != nil {
		t.Fatalf("SyncNow after Redis came back = %v", err)
	}
	start := now.UnixMicro() - now.UnixMicro()%time.Hour.Microseconds()
	got, err := srv.Client().Get(ctx, syncKey(approxKey{"approx", "k"}, start)).Int64()
	if err != nil || got != 7 {
		t.Errorf("the store's count after the retried sync = %d, %v; want 7", got, err)
	}
}
