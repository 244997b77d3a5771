package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/testkit"
	"github.com/redis/go-redis/v9"
)

// twoTenants is a plan of 10 per second shared by tenants a and b, each guaranteed 5 and
// allowed to borrow up to 10; the plan keeps a reserve of 2 for requests within a share.
func twoTenants(prefix string) (plan, tenant Rule) {
	plan = Rule{ID: prefix + "plan", Algorithm: TokenBucket, Limit: 10, Window: time.Second, Level: &Level{Reserve: 2}}
	tenant = Rule{ID: prefix + "tenant", Algorithm: TokenBucket, Limit: 5, Window: time.Second, Level: &Level{Parent: plan.ID, Ceiling: 10}}
	return plan, tenant
}

// chainOf is one request of a tenant under the plan: the leaf first, as a route lists it.
func chainOf(plan, tenant Rule, who string) []Request {
	return []Request{{Rule: tenant, Key: "tenant:" + who}, {Rule: plan, Key: "plan:gold"}}
}

// limiters runs f on Memory and on Redis, each on the virtual clock clk gives.
func limiters(t *testing.T, f func(t *testing.T, l Limiter, clk *fakeClock)) {
	t.Run("memory", func(t *testing.T) {
		clk := newClock(epoch)
		f(t, NewMemory(clk.Clock()), clk)
	})
	t.Run("redis", func(t *testing.T) {
		srv := testkit.StartRedis(t)
		clk := newClock(epoch)
		store := NewRedis(srv.Client())
		store.now = clk.Now
		f(t, store, clk)
	})
}

// TestHierarchyBorrowsAndGivesBack: tenant b sends 50 a second throughout; tenant a is idle
// for two seconds, then sends 5 a second, its share. While a is idle, b borrows a's share
// (10 a second, its ceiling); once a is back, a gets every request it asks within its share
// and b falls back to its own 5.
func TestHierarchyBorrowsAndGivesBack(t *testing.T) {
	limiters(t, func(t *testing.T, l Limiter, clk *fakeClock) {
		plan, tenant := twoTenants("give-back-")
		got := borrowTrace(t, l, clk, plan, tenant)
		for s, want := range []struct{ a, aAsked, bMin, bMax int }{
			{0, 0, 17, 18}, // b alone: the plan's full bucket (10) and a second's refill (10), less the reserve (2)
			{0, 0, 10, 10}, // b alone, steady: its ceiling, all of the plan
			{5, 5, 5, 5},   // a back: its whole share at once; b back to its own share
			{5, 5, 5, 5},
		} {
			g := got[s]
			if g.a != want.a || g.aAsked != want.aAsked || g.b < want.bMin || g.b > want.bMax {
				t.Errorf("second %d: a %d of %d, b %d; want a %d of %d, b in [%d, %d]", s, g.a, g.aAsked, g.b, want.a, want.aAsked, want.bMin, want.bMax)
			}
			if g.borrowed > 0 && s >= 2 {
				t.Errorf("second %d: b borrowed %d times while a used its share", s, g.borrowed)
			}
		}
		if got[1].borrowed < 5 {
			t.Errorf("second 1: b borrowed %d times, want at least 5 (a's idle share)", got[1].borrowed)
		}
	})
}

// TestHierarchyWithoutCeilingDoesNotBorrow is the control: the same trace with no ceiling
// leaves b at its share while a is idle, and the plan's capacity unused.
func TestHierarchyWithoutCeilingDoesNotBorrow(t *testing.T) {
	limiters(t, func(t *testing.T, l Limiter, clk *fakeClock) {
		plan, tenant := twoTenants("rigid-")
		tenant.Level = &Level{Parent: plan.ID}
		got := borrowTrace(t, l, clk, plan, tenant)
		if got[1].b != 5 || got[1].borrowed != 0 {
			t.Errorf("second 1 without a ceiling: b %d, borrowed %d; want 5, 0", got[1].b, got[1].borrowed)
		}
	})
}

// second counts one second of borrowTrace.
type second struct{ a, aAsked, b, borrowed, plan int }

// borrowTrace runs four seconds: b asks every 20ms from the start, a every 200ms from the
// third second, after b in the same instant, so it finds what b left. It checks the plan's
// limit and counts by second.
func borrowTrace(t *testing.T, l Limiter, clk *fakeClock, plan, tenant Rule) [4]second {
	t.Helper()
	var got [4]second
	ctx := context.Background()
	for tick := range 200 { // 20ms each
		clk.Set(epoch.Add(time.Duration(tick) * 20 * time.Millisecond))
		s := &got[tick/50]
		res, err := l.Allow(ctx, chainOf(plan, tenant, "b"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			s.b++
			s.plan++
			if res.Rules[0].Borrowing {
				s.borrowed++
			}
		}
		if tick >= 100 && tick%10 == 0 {
			s.aAsked++
			res, err = l.Allow(ctx, chainOf(plan, tenant, "a"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed {
				s.a++
				s.plan++
			}
		}
	}
	for i, s := range got {
		// The plan's bucket: its burst (10) and its rate in the first second, then its rate.
		if limit := 20 - 10*min(i, 1); s.plan > limit {
			t.Errorf("second %d: the plan passed %d, over its limit %d", i, s.plan, limit)
		}
	}
	return got
}

// TestHierarchyHoldsUnderConcurrency hammers a three-level hierarchy (platform → plan →
// tenant) with 1,000 concurrent requests from two tenants of two plans, and counts what each
// level passed. No level exceeds its limit (its ceiling where it has one); each tenant
// passes beyond its share by borrowing; the platform stops exactly its reserve short.
func TestHierarchyHoldsUnderConcurrency(t *testing.T) {
	platform := Rule{ID: "conc-platform", Algorithm: GCRA, Limit: 100, Window: time.Hour, Level: &Level{Reserve: 5}}
	plan := Rule{ID: "conc-plan", Algorithm: TokenBucket, Limit: 40, Window: time.Hour, Level: &Level{Parent: platform.ID, Ceiling: 80, Reserve: 3}}
	tenant := Rule{ID: "conc-tenant", Algorithm: TokenBucket, Limit: 15, Window: time.Hour, Level: &Level{Parent: plan.ID, Ceiling: 80}}
	who := []struct{ tenant, plan string }{{"t1", "p1"}, {"t3", "p2"}}
	run := func(t *testing.T, l Limiter) {
		var mu sync.Mutex
		passed := map[string]int{}
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for i := range 1000 {
			w := who[i%len(who)]
			wg.Go(func() {
				res, err := l.Allow(context.Background(), []Request{
					{Rule: tenant, Key: "tenant:" + w.tenant}, {Rule: plan, Key: "plan:" + w.plan}, {Rule: platform, Key: "global"}})
				if err != nil {
					errs <- err
					return
				}
				if res.Allowed {
					mu.Lock()
					passed[w.tenant]++
					passed[w.plan]++
					passed["platform"]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, c := range []struct {
			key   string
			limit int
		}{{"t1", 80}, {"t3", 80}, {"p1", 80}, {"p2", 80}, {"platform", 100}} {
			if passed[c.key] > c.limit {
				t.Errorf("%s passed %d, over its limit %d", c.key, passed[c.key], c.limit)
			}
		}
		if passed["platform"] != 95 {
			t.Errorf("platform passed %d, want 95: all of it but its reserve of 5", passed["platform"])
		}
		for _, w := range who {
			if passed[w.tenant] <= tenant.Limit {
				t.Errorf("%s passed %d, want more than its share %d by borrowing", w.tenant, passed[w.tenant], tenant.Limit)
			}
		}
		t.Logf("passed %v", passed)
	}
	t.Run("memory", func(t *testing.T) { run(t, NewMemory(clock.Clock{})) })
	t.Run("redis", func(t *testing.T) {
		srv := testkit.StartRedis(t)
		run(t, NewRedis(srv.Client()))
	})
}

// TestRedisMatchesMemoryHierarchy replays random traces of three-level chains, with a flat
// rule beside them now and then, through the script and Memory, and requires the same
// decision for every level, field by field.
func TestRedisMatchesMemoryHierarchy(t *testing.T) {
	srv := testkit.StartRedis(t)
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 17))
			alg := func() Algorithm { return []Algorithm{TokenBucket, GCRA}[rng.IntN(2)] }
			id := func(s string) string { return fmt.Sprintf("match-%d-%s", seed, s) }
			platform := Rule{ID: id("platform"), Algorithm: alg(), Limit: 12, Window: time.Second, Level: &Level{Reserve: 1 + rng.IntN(3)}}
			plan := Rule{ID: id("plan"), Algorithm: alg(), Limit: 6, Window: time.Second, Burst: rng.IntN(6),
				Level: &Level{Parent: platform.ID, Ceiling: 6 + rng.IntN(7), Reserve: 1 + rng.IntN(2)}}
			tenant := Rule{ID: id("tenant"), Algorithm: alg(), Limit: 2, Window: time.Second, Level: &Level{Parent: plan.ID, Ceiling: 2 + rng.IntN(5)}}
			flat := Rule{ID: id("flat"), Algorithm: Algorithms[rng.IntN(len(Algorithms))], Limit: 5, Window: time.Second}
			if seed == 0 { // a shaping rule's max delay rides in the chain call too
				flat.Algorithm, flat.MaxDelay = GCRA, 300*time.Millisecond
			}
			clk := newClock(epoch)
			store := NewRedis(srv.Client())
			store.now = clk.Now
			mem := NewMemory(clk.Clock())
			at := time.Duration(0)
			for i := range 300 {
				at += time.Duration(rng.IntN(150_000)) * time.Microsecond
				clk.Set(epoch.Add(at))
				t1 := rng.IntN(4)
				reqs := []Request{
					{Rule: tenant, Key: fmt.Sprint("tenant:", t1), Cost: 1 + rng.IntN(2)},
					{Rule: plan, Key: fmt.Sprint("plan:", t1/2)},
					{Rule: platform, Key: "global"},
				}
				if rng.IntN(3) == 0 {
					reqs = append(reqs, Request{Rule: flat, Key: "ip:1"})
				}
				rng.Shuffle(len(reqs), func(a, b int) { reqs[a], reqs[b] = reqs[b], reqs[a] })
				got, want := allowBoth(t, store, mem, reqs, i)
				for j, q := range reqs {
					g, w := got.Rules[j], want.Rules[j]
					if diff := sameDecision(g, w); diff != "" || g.Borrowing != w.Borrowing || g.Limit != w.Limit {
						t.Fatalf("step %d rule %s: Redis decided %s, borrowing %v limit %d (Memory %v %d)",
							i, q.Rule.ID, diff, g.Borrowing, g.Limit, w.Borrowing, w.Limit)
					}
				}
			}
		})
	}
}

func TestHierarchyValidation(t *testing.T) {
	plan, tenant := twoTenants("v-")
	// with returns r changed by f, on a copy of its Level.
	with := func(r Rule, f func(*Rule, *Level)) Rule {
		lv := Level{}
		if r.Level != nil {
			lv = *r.Level
		}
		r.Level = &lv
		f(&r, &lv)
		return r
	}
	tests := []struct {
		name  string
		reqs  []Request
		field string // the RuleError's field, or "" for a plain error
		want  string
	}{
		{"fixed window level", chainOf(plan, with(tenant, func(r *Rule, lv *Level) { r.Algorithm = FixedWindow }), "a"), "algorithm", "token_bucket or gcra"},
		{"ceiling below limit", chainOf(plan, with(tenant, func(r *Rule, lv *Level) { lv.Ceiling = 3 }), "a"), "ceiling", "below the rule's own limit"},
		{"ceiling above parent", chainOf(plan, with(tenant, func(r *Rule, lv *Level) { lv.Ceiling = 11 }), "a"), "ceiling", "above its parent"},
		{"ceiling without parent", []Request{{Rule: with(tenant, func(r *Rule, lv *Level) { lv.Parent = "" }), Key: "k"}}, "ceiling", "has none"},
		{"leased level", chainOf(plan, with(tenant, func(r *Rule, lv *Level) { r.Lease = 2 }), "a"), "lease", "leases"},
		{"queued level", chainOf(plan, with(tenant, func(r *Rule, lv *Level) { r.Algorithm, r.MaxDelay = GCRA, time.Second }), "a"), "max_delay", "does not queue"},
		{"sharded level", chainOf(with(plan, func(r *Rule, lv *Level) { r.Shards = 2 }), tenant, "a"), "shards", "sharded"},
		{"shadow level", chainOf(plan, with(tenant, func(r *Rule, lv *Level) { r.Mode = Shadow }), "a"), "mode", "enforced"},
		{"partial level", chainOf(with(plan, func(r *Rule, lv *Level) { r.Mode, r.EnforcePercent = Partial, 30 }), tenant, "a"), "mode", "every key"},
		{"own parent", []Request{{Rule: with(tenant, func(r *Rule, lv *Level) { lv.Parent = r.ID }), Key: "k"}}, "parent", "its own parent"},
		{"missing parent", chainOf(plan, tenant, "a")[:1], "", "not in the request"},
		{"parent without reserve", chainOf(with(plan, func(r *Rule, lv *Level) { lv.Reserve = 0 }), tenant, "a"), "reserve", "at least 1"},
		{"failure modes differ", chainOf(plan, with(tenant, func(r *Rule, lv *Level) { r.OnStoreFailure = FailClosed }), "a"), "on_store_failure", "fails one way"},
		{"cycle", []Request{
			{Rule: with(plan, func(r *Rule, lv *Level) { lv.Parent = tenant.ID; lv.Ceiling = 10 }), Key: "p"},
			{Rule: with(tenant, func(r *Rule, lv *Level) { lv.Reserve = 1 }), Key: "t"}}, "parent", "comes back"},
		{"two children in one call", append(chainOf(plan, tenant, "a"), Request{Rule: with(tenant, func(r *Rule, lv *Level) { r.ID = "v-other" }), Key: "x"}), "", "also the parent"},
		{"charged level", []Request{{Rule: tenant, Key: "t", Charge: true}, {Rule: plan, Key: "p"}}, "", "charged"},
		{"charged parent", []Request{{Rule: tenant, Key: "t"}, {Rule: plan, Key: "p", Charge: true}}, "", "charged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewMemory(clock.Clock{}).Allow(context.Background(), tt.reqs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Allow = %v, want an error containing %q", err, tt.want)
			}
			var re *RuleError
			if tt.field != "" && (!errors.As(err, &re) || re.Field != tt.field) {
				t.Errorf("Allow = %v, want a RuleError on field %s", err, tt.field)
			}
		})
	}
	if _, err := NewMemory(clock.Clock{}).Allow(context.Background(), chainOf(plan, tenant, "a")); err != nil {
		t.Errorf("Allow(valid chain) = %v", err)
	}
}

// TestFailsafeDecidesAChainLocally: while the store is down a chain is decided by the
// fallback, whole: the tenant borrows up to its ceiling of 10 from the plan's 10, less the
// plan's reserve of 2, and nothing is owed to the store for it.
func TestFailsafeDecidesAChainLocally(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)), MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	clk := newClock(epoch)
	f, err := NewFailsafe(NewRedis(down), FailsafeOptions{Clock: clk.Clock()})
	if err != nil {
		t.Fatal(err)
	}
	plan, tenant := twoTenants("down-")
	allowed, borrowed := 0, 0
	for range 20 {
		res := mustAllow(t, f, chainOf(plan, tenant, "a"))
		if res.Path != PathFallback {
			t.Fatalf("path = %s, want %s", res.Path, PathFallback)
		}
		if res.Allowed {
			allowed++
			if res.Rules[0].Borrowing {
				borrowed++
			}
		}
	}
	if allowed != 8 || borrowed != 3 {
		t.Errorf("allowed %d, borrowed %d of 20 at one instant; want 8 and 3: the share of 5, then the plan down to its reserve", allowed, borrowed)
	}
	if f.ledger.owing() {
		t.Errorf("the fallback owes the store for a chain, want nothing owed")
	}
}
