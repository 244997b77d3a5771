package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"github.com/redis/go-redis/v9"
)

// sameDecision reports how two decisions differ, or "" when they agree.
func sameDecision(got, want Decision) string {
	if got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.Reset != want.Reset || got.RetryAfter != want.RetryAfter || got.Delay != want.Delay {
		return fmt.Sprintf("allowed %v remaining %d reset %v retry %v delay %v, want %v %d %v %v %v",
			got.Allowed, got.Remaining, got.Reset, got.RetryAfter, got.Delay, want.Allowed, want.Remaining, want.Reset, want.RetryAfter, want.Delay)
	}
	return ""
}

// replayBoth replays steps under rule through the Lua scripts and the in-memory algorithms on
// one virtual clock and fails at the first step where they decide differently, field by
// field. It returns the Redis decisions.
func replayBoth(t *testing.T, client *redis.Client, rule Rule, steps []step) []Decision {
	t.Helper()
	clk := newClock(epoch)
	store := NewRedis(client)
	store.now = clk.Now
	got := replay(t, store, clk, rule, steps)
	want := replay(t, NewMemory(clk.Clock()), clk, rule, steps)
	for i := range steps {
		if diff := sameDecision(got[i], want[i]); diff != "" {
			t.Fatalf("step %d %+v: Redis decided %s (Memory)", i, steps[i], diff)
		}
	}
	return got
}

// TestRedisMatchesMemory replays random traces through the Lua scripts and the in-memory
// algorithms on the same virtual clock and requires the same decision, field by field.
func TestRedisMatchesMemory(t *testing.T) {
	srv := testkit.StartRedis(t)
	client := srv.Client()
	for seed := range uint64(4) {
		for _, rule := range testRules() {
			rule.ID = fmt.Sprintf("%s-%d", rule.ID, seed)
			t.Run(rule.ID, func(t *testing.T) {
				replayBoth(t, client, rule, randomTrace(rand.New(rand.NewPCG(seed, 7)), rule, 150))
			})
		}
	}
}

// TestRedisMatchesMemoryMultiRule does the same with three rules of random algorithms per
// request, so the two-pass commit is compared too.
func TestRedisMatchesMemoryMultiRule(t *testing.T) {
	srv := testkit.StartRedis(t)
	client := srv.Client()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			all := testRules()
			var rules []Rule
			for i := range 3 {
				r := all[rng.IntN(len(all))]
				r.ID = fmt.Sprintf("multi-%d-%d-%s", seed, i, r.ID)
				rules = append(rules, r)
			}
			clk := newClock(epoch)
			store := NewRedis(client)
			store.now = clk.Now
			mem := NewMemory(clk.Clock())
			steps := randomTrace(rng, rules[0], 200)
			for i, s := range steps {
				clk.Set(epoch.Add(s.at))
				reqs := make([]Request, len(rules))
				for j, r := range rules {
					reqs[j] = Request{Rule: r, Key: s.key, Cost: 1 + rng.IntN(2), Charge: r.Algorithm != Concurrency && rng.IntN(10) == 0}
				}
				got, want := allowBoth(t, store, mem, reqs, i)
				for j := range rules {
					if diff := sameDecision(got.Rules[j], want.Rules[j]); diff != "" {
						t.Fatalf("step %d rule %s: Redis decided %s (Memory)", i, rules[j].ID, diff)
					}
				}
			}
		})
	}
}

// allowBoth asks store and mem about reqs, step i of a trace, and fails unless both allow
// or both deny.
func allowBoth(t *testing.T, store *Redis, mem *Memory, reqs []Request, i int) (got, want Result) {
	t.Helper()
	got, err := store.Allow(context.Background(), reqs)
	if err != nil {
		t.Fatalf("Redis.Allow step %d: %v", i, err)
	}
	want, err = mem.Allow(context.Background(), reqs)
	if err != nil {
		t.Fatalf("Memory.Allow step %d: %v", i, err)
	}
	if got.Allowed != want.Allowed {
		t.Fatalf("step %d: Redis allowed %v, Memory %v", i, got.Allowed, want.Allowed)
	}
	return got, want
}

// TestRedisKeysExpire checks that every algorithm's key carries a TTL no longer than it
// matters (or than the one-second floor), and that an idle client's keys vanish.
func TestRedisKeysExpire(t *testing.T) {
	srv := testkit.StartRedis(t)
	client := srv.Client()
	store := NewRedis(client)
	ctx := context.Background()
	for _, a := range Algorithms {
		t.Run(string(a), func(t *testing.T) {
			rule := Rule{ID: "ttl-" + string(a), Algorithm: a, Limit: 10, Window: 200 * time.Millisecond}
			if _, err := store.Allow(ctx, []Request{{Rule: rule, Key: "user:1", Cost: 2}}); err != nil {
				t.Fatal(err)
			}
			key := storageKey(rule.ID, "user:1")
			ttl, err := client.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			// The sliding counter needs its count through the next window too; no key lives
			// less than a second.
			if want := max(2*rule.Window, time.Second); ttl <= 0 || ttl > want {
				t.Errorf("PTTL(%s) = %v, want in (0, %v]", key, ttl, want)
			}
			testkit.Eventually(t, 3*time.Second, key+" vanishes", func() bool {
				return client.Exists(ctx, key).Val() == 0
			})
		})
	}
}

// TestRedisWindowKeepsExpiry: the counters' key expires when its window's state stops
// mattering, so a later request of the same window leaves the expiry where it is (KEEPTTL)
// rather than setting it again.
func TestRedisWindowKeepsExpiry(t *testing.T) {
	srv := testkit.StartRedis(t)
	client := srv.Client()
	ctx := context.Background()
	for _, a := range []Algorithm{FixedWindow, SlidingCounter} {
		t.Run(string(a), func(t *testing.T) {
			clk := newClock(epoch.Truncate(time.Minute).Add(time.Minute)) // a window's start
			store := NewRedis(client)
			store.now = clk.Now
			rule := Rule{ID: "keep-" + string(a), Algorithm: a, Limit: 100, Window: time.Minute}
			key := storageKey(rule.ID, "user:1")
			pttl := func() time.Duration {
				t.Helper()
				if _, err := store.Allow(ctx, []Request{{Rule: rule, Key: "user:1"}}); err != nil {
					t.Fatal(err)
				}
				d, err := client.PTTL(ctx, key).Result()
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			first := pttl()
			clk.Add(20 * time.Second) // the same window
			// Re-armed, the expiry would come 20s sooner; kept, it moves by the real time
			// between the two calls only.
			if second := pttl(); first-second > 10*time.Second {
				t.Errorf("PTTL(%s) after a second request of the window = %v, want about %v (kept)", key, second, first)
			}
		})
	}
}

// TestRedisAtomicAcrossReplicas: three limiters with their own connections, 1,000 concurrent
// requests against a 100-token bucket → exactly 100 allowed.
func TestRedisAtomicAcrossReplicas(t *testing.T) {
	srv := testkit.StartRedis(t)
	replicas := []*Redis{NewRedis(srv.Client()), NewRedis(srv.Client()), NewRedis(srv.Client())}
	rule := Rule{ID: "atomic", Algorithm: TokenBucket, Limit: 100, Window: time.Hour}
	if got := hammer(t, replicas, []Request{{Rule: rule, Key: "user:42"}}, 1000); got != 100 {
		t.Errorf("allowed %d of 1000 against a 100-token bucket, want exactly 100", got)
	}
}

// hammer sends n concurrent decisions spread over the limiters and counts the allowed ones.
func hammer(t *testing.T, ls []*Redis, reqs []Request, n int) int {
	t.Helper()
	var allowed, failed atomic.Int64
	var wg sync.WaitGroup
	work := make(chan int, n)
	for i := range n {
		work <- i
	}
	close(work)
	for w := range 32 {
		wg.Go(func() {
			l := ls[w%len(ls)]
			for range work {
				res, err := l.Allow(context.Background(), reqs)
				switch {
				case err != nil:
					failed.Add(1)
				case res.Allowed:
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d decisions failed", f, n)
	}
	return int(allowed.Load())
}

// countingHook counts round trips (a pipeline is one) and commands (each of a pipeline's).
type countingHook struct{ trips, commands atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Add(1)
		h.commands.Add(1)
		return next(ctx, cmd)
	}
}
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		h.commands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*countingHook)(nil)

// threeRules are one user's rules, on one slot: a rate, a burst limit and a monthly quota.
func threeRules(user string) []Request {
	return []Request{
		{Rule: Rule{ID: "user-rate", Algorithm: TokenBucket, Limit: 50, Window: time.Second}, Key: user},
		{Rule: Rule{ID: "user-burst", Algorithm: SlidingCounter, Limit: 5, Window: time.Minute}, Key: user},
		{Rule: Rule{ID: "user-quota", Algorithm: FixedWindow, Limit: 100000, Window: 30 * 24 * time.Hour}, Key: user},
	}
}

func TestRedisOneRoundTripForThreeRules(t *testing.T) {
	srv := testkit.StartRedis(t)
	client := srv.Client()
	hook := &countingHook{}
	client.AddHook(hook)
	store := NewRedis(client)
	ctx := context.Background()
	reqs := threeRules("user:7")
	if _, err := store.Allow(ctx, reqs); err != nil { // loads the script
		t.Fatal(err)
	}
	admin := srv.Client()
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := hook.trips.Load()
	const n = 3
	for range n {
		if _, err := store.Allow(ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	if got := hook.trips.Load() - before; got != n {
		t.Errorf("%d decisions of 3 rules took %d round trips, want %d", n, got, n)
	}
	wantCalls(t, admin, "evalsha", n)
}

// wantCalls fails unless the server behind client ran command exactly n times since its
// statistics were last reset (INFO commandstats).
func wantCalls(t *testing.T, client *redis.Client, command string, n int) {
	t.Helper()
	stats, err := client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("cmdstat_%s:calls=%d,", command, n); !strings.Contains(stats, want) {
		t.Errorf("INFO commandstats = %q, want it to contain %q", stats, want)
	}
}

func TestRedisDenialSpendsNoOtherBudget(t *testing.T) {
	srv := testkit.StartRedis(t)
	store := NewRedis(srv.Client())
	ctx := context.Background()
	reqs := threeRules("user:8")
	var last Result
	for i := range 8 {
		res, err := store.Allow(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		if wantAllowed := i < 5; res.Allowed != wantAllowed {
			t.Fatalf("request %d: allowed = %v, want %v", i, res.Allowed, wantAllowed)
		}
		last = res
	}
	// Five passed; three were denied by user-burst and must not have spent the others.
	if last.Rule != "user-burst" || last.RetryAfter <= 0 {
		t.Errorf("denial = rule %s retry %v, want user-burst with a RetryAfter", last.Rule, last.RetryAfter)
	}
	if got := last.Rules[0].Remaining; got != 45 {
		t.Errorf("user-rate remaining = %d, want 45 (five spent)", got)
	}
	if got := last.Rules[2].Remaining; got != 100000-5 {
		t.Errorf("user-quota remaining = %d, want %d", got, 100000-5)
	}
}

func TestRedisConcurrencyLeases(t *testing.T) {
	srv := testkit.StartRedis(t)
	store := NewRedis(srv.Client())
	ctx := context.Background()
	rule := Rule{ID: "inflight", Algorithm: Concurrency, Limit: 2, Window: 300 * time.Millisecond}
	req := []Request{{Rule: rule, Key: "tenant:1"}}
	var held []Lease
	for range 2 {
		res, err := store.Allow(ctx, req)
		if err != nil || !res.Allowed {
			t.Fatalf("Allow = %v, %v; want allowed", res.Allowed, err)
		}
		held = append(held, res.Leases()...)
	}
	if res, _ := store.Allow(ctx, req); res.Allowed {
		t.Fatalf("third Allow with two slots held = allowed, want denied")
	}
	if err := store.Release(ctx, held[0]); err != nil {
		t.Fatal(err)
	}
	if res, _ := store.Allow(ctx, req); !res.Allowed {
		t.Fatalf("Allow after Release = denied, want allowed")
	}
	// Nobody releases now: the leases expire by themselves, as after a crash.
	testkit.Eventually(t, 2*time.Second, "crashed leases expire", func() bool {
		res, err := store.Allow(ctx, req)
		if err == nil && res.Allowed {
			_ = store.Release(ctx, res.Leases()...)
			return res.Remaining == 1
		}
		return false
	})
}

func TestRedisScriptReloadAfterFlush(t *testing.T) {
	srv := testkit.StartRedis(t)
	client := srv.Client()
	store := NewRedis(client)
	ctx := context.Background()
	rule := Rule{ID: "r", Algorithm: GCRA, Limit: 10, Window: time.Second}
	if _, err := store.Allow(ctx, []Request{{Rule: rule, Key: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if res, err := store.Allow(ctx, []Request{{Rule: rule, Key: "a"}}); err != nil || res.Remaining != 8 {
		t.Errorf("Allow after SCRIPT FLUSH = remaining %d, %v; want 8, nil", res.Remaining, err)
	}
}

// TestChargeOverdraws: a cost known only after the response is charged whatever the budget
// says, and later requests wait until the debt is paid back — on Redis as in memory.
func TestChargeOverdraws(t *testing.T) {
	srv := testkit.StartRedis(t)
	clk := newClock(epoch)
	store := NewRedis(srv.Client())
	store.now = clk.Now
	tokens := Rule{ID: "assistant-tokens", Algorithm: TokenBucket, Limit: 10, Window: time.Second}
	for _, l := range []struct {
		name string
		lim  Limiter
	}{{"memory", NewMemory(clk.Clock())}, {"redis", store}} {
		t.Run(l.name, func(t *testing.T) {
			clk.Set(epoch)
			key := "tenant:" + l.name
			if res := mustAllow(t, l.lim, []Request{{Rule: tokens, Key: key}}); !res.Allowed || res.Remaining != 9 {
				t.Fatalf("first request: allowed %v remaining %d, want true 9", res.Allowed, res.Remaining)
			}
			// The answer used 25 tokens: 9 in the bucket, 16 owed.
			charged := mustAllow(t, l.lim, []Request{{Rule: tokens, Key: key, Cost: 25, Charge: true}})
			if !charged.Allowed || charged.Remaining != 0 {
				t.Errorf("charge: allowed %v remaining %d, want true 0", charged.Allowed, charged.Remaining)
			}
			// 16 owed + 1 for the next request = 17 tokens at 10/s.
			res := mustAllow(t, l.lim, []Request{{Rule: tokens, Key: key}})
			if res.Allowed || res.RetryAfter != 1700*time.Millisecond {
				t.Errorf("next request: allowed %v retry %v, want false 1.7s", res.Allowed, res.RetryAfter)
			}
			clk.Add(1700 * time.Millisecond)
			if res := mustAllow(t, l.lim, []Request{{Rule: tokens, Key: key}}); !res.Allowed {
				t.Errorf("request after the debt is paid: denied, want allowed")
			}
		})
	}
}
