package ratelimit

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/testkit"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// BenchmarkDecision measures decisions per second and the p50/p99 latency of one decision:
// in memory, on Redis with one and three rules, behind Failsafe, and — against the same
// redis-server in the same run — github.com/go-redis/redis_rate (GCRA, one call per limit)
// as the peer baseline. Limits are high so every request passes: the cost measured is the
// decision's, not a denial shortcut. Besides wall-clock numbers it reports the Redis server's
// own time per decision (server-µs, from INFO commandstats), which the load of a shared
// machine disturbs far less. Run with `make bench`.
func BenchmarkDecision(b *testing.B) {
	srv := testkit.StartRedis(b)
	client := srv.Client()
	ctx := context.Background()

	gcra := Rule{ID: "rate", Algorithm: GCRA, Limit: 1_000_000, Window: time.Second}
	three := []Rule{
		gcra,
		{ID: "minute", Algorithm: TokenBucket, Limit: 1_000_000, Window: time.Minute},
		{ID: "quota", Algorithm: FixedWindow, Limit: 100_000_000, Window: 30 * 24 * time.Hour},
	}
	requests := func(rules []Rule, key string) []Request {
		reqs := make([]Request, len(rules))
		for i, r := range rules {
			reqs[i] = Request{Rule: r, Key: key}
		}
		return reqs
	}
	store := NewRedis(client)
	// Failsafe as a gateway would run it: a client that ends calls at their deadline, and a
	// timeout that on this loaded two-core machine only a stall would reach.
	bound := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = bound.Close() })
	failsafe, err := NewFailsafe(NewRedis(bound), FailsafeOptions{Timeout: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	mem := NewMemory(clock.Clock{})
	peer := redis_rate.NewLimiter(client)
	peerLimits := []redis_rate.Limit{
		redis_rate.PerSecond(1_000_000),
		redis_rate.PerMinute(1_000_000),
		{Rate: 100_000_000, Burst: 100_000_000, Period: 30 * 24 * time.Hour},
	}
	limiter := func(l Limiter, rules []Rule) func(key string) error {
		return func(key string) error {
			_, err := l.Allow(ctx, requests(rules, key))
			return err
		}
	}
	peerCalls := func(limits []redis_rate.Limit) func(key string) error {
		return func(key string) error {
			for i, lim := range limits {
				// One key per limit, as a redis_rate user would name them.
				res, err := peer.Allow(ctx, key+":"+strconv.Itoa(i), lim)
				if err != nil {
					return err
				}
				if res.Allowed == 0 {
					return nil
				}
			}
			return nil
		}
	}
	for _, bc := range []struct {
		name   string
		decide func(key string) error
	}{
		{"memory/1-rule", limiter(mem, three[:1])},
		{"memory/3-rules", limiter(mem, three)},
		{"redis/1-rule", limiter(store, three[:1])},
		{"redis/3-rules", limiter(store, three)},
		{"failsafe-redis/3-rules", limiter(failsafe, three)},
		{"redis_rate/1-limit", peerCalls(peerLimits[:1])},
		{"redis_rate/3-limits", peerCalls(peerLimits)},
	} {
		// serial: one decision in flight, so latency is the round trips'; parallel: many, as
		// in a busy gateway, so throughput is bound by the CPU of client and server.
		stats := client
		if strings.HasPrefix(bc.name, "memory/") {
			stats = nil
		}
		b.Run("serial/"+bc.name, func(b *testing.B) { measure(b, 0, stats, bc.decide) })
		b.Run("parallel/"+bc.name, func(b *testing.B) { measure(b, 4, stats, bc.decide) })
	}
}

// BenchmarkRedisParallel measures Redis.Allow with two rules from about 64 goroutines (32 per
// processor on two), as a busy gateway calls it, with concurrent decisions batched into
// shared round trips (K pipelines in flight at most) and without batching, side by side
// against one redis-server:
//
//	go test -run '^$' -bench Parallel -benchmem -count 3 ./gateway/ratelimit
//
// Besides throughput and latency it reports the CPU each decision costs this process
// (client-cpu-µs: encoding, the client's system calls and wake-ups) and the server
// (server-cpu-µs, from INFO cpu: the scripts and the per-command I/O), and how many
// decisions share a round trip (decisions/trip). On a machine that runs both, throughput
// follows the sum of the two CPU costs.
func BenchmarkRedisParallel(b *testing.B) {
	srv := testkit.StartRedis(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = client.Close() })
	trips := &scriptTrips{}
	client.AddHook(trips)
	stats := srv.Client()
	ctx := context.Background()
	rules := []Rule{
		{ID: "per-user", Algorithm: TokenBucket, Limit: 1_000_000, Window: time.Second},
		{ID: "per-ip", Algorithm: GCRA, Limit: 1_000_000, Window: time.Second},
	}
	for _, bc := range []struct {
		name  string
		slots int
	}{
		{"unbatched", 0},
		{"batched/K=1", 1},
		{"batched/K=2", 2},
		{"batched/K=4", 4},
		{"batched/K=GOMAXPROCS", defaultSlots()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := NewRedis(client)
			store.batch.slots = bc.slots
			decide := func(key string) error {
				_, err := store.Allow(ctx, []Request{{Rule: rules[0], Key: key}, {Rule: rules[1], Key: key}})
				return err
			}
			if err := decide("warm-up"); err != nil { // loads the script
				b.Fatal(err)
			}
			trips.trips.Store(0)
			client0, server0 := processCPU(b), serverCPU(b, stats)
			measure(b, 32, stats, decide)
			client1, server1 := processCPU(b), serverCPU(b, stats)
			b.ReportMetric(float64((client1-client0).Microseconds())/float64(b.N), "client-cpu-µs")
			b.ReportMetric(float64((server1-server0).Microseconds())/float64(b.N), "server-cpu-µs")
			b.ReportMetric(float64(b.N)/float64(max(1, trips.trips.Load())), "decisions/trip")
		})
	}
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the CPU time, user and system, the Redis server has used (INFO cpu).
func serverCPU(b *testing.B, stats *redis.Client) time.Duration {
	b.Helper()
	info, err := stats.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for line := range strings.Lines(info) {
		// used_cpu_sys:1.234567
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_sys" && name != "used_cpu_user") {
			continue
		}
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatalf("INFO cpu %q: %v", line, err)
		}
		total += time.Duration(secs * float64(time.Second))
	}
	return total
}

// measure runs b.N decisions over 1,000 client keys, from one goroutine, or from
// parallelism×GOMAXPROCS goroutines, and reports throughput and latency percentiles, and,
// when stats is not nil, the server time per decision that its INFO commandstats show.
func measure(b *testing.B, parallelism int, stats *redis.Client, decide func(key string) error) {
	b.Helper()
	b.ReportAllocs()
	if stats != nil {
		if err := stats.ConfigResetStat(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
		next      atomic.Int64
		failures  atomic.Int64
	)
	b.ResetTimer()
	start := time.Now()
	if parallelism == 0 {
		for i := range b.N {
			t0 := time.Now()
			if err := decide("user:" + strconv.Itoa(i%1000)); err != nil {
				failures.Add(1)
			}
			latencies = append(latencies, time.Since(t0))
		}
	}
	if parallelism > 0 {
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			var mine []time.Duration
			for pb.Next() {
				key := "user:" + strconv.FormatInt(next.Add(1)%1000, 10)
				t0 := time.Now()
				if err := decide(key); err != nil {
					failures.Add(1)
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failures.Load(); f > 0 {
		b.Fatalf("%d of %d decisions failed", f, b.N)
	}
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	if stats != nil {
		b.ReportMetric(float64(scriptTime(b, stats))/float64(b.N), "server-µs")
	}
}

// scriptTime is the time in µs the server has spent running scripts since its statistics
// were reset: the scripts' own commands included, the reading of requests and the writing of
// replies not.
func scriptTime(b *testing.B, stats *redis.Client) int64 {
	b.Helper()
	info, err := stats.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for line := range strings.Lines(info) {
		// cmdstat_evalsha:calls=5000,usec=52000,usec_per_call=10.40,...
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatalf("INFO commandstats %q: %v", line, err)
				}
				total += n
			}
		}
	}
	return total
}

// BenchmarkApproximate compares a fixed window decided in Redis on every request with the
// same limit decided approximately (Rule.Sync 100ms: counted in memory, synced in one
// pipeline per interval), on 10 busy keys against one redis-server, serially and from many
// goroutines. Besides decisions/s it reports the Redis commands one decision costs
// (redis-cmds/decision, counted at the client: a script call is one, a sync's INCRBY and
// PEXPIRE one each, the last sync included). A key synced costs two commands an interval
// however few decisions it had: approximate mode pays off on busy keys only. Run with
// `make bench`.
func BenchmarkApproximate(b *testing.B) {
	srv := testkit.StartRedis(b)
	ctx := context.Background()
	exact := Rule{ID: "window", Algorithm: FixedWindow, Limit: 100_000_000, Window: time.Minute}
	approx := exact
	approx.ID, approx.Sync = "window-approx", 100*time.Millisecond
	for _, bc := range []struct {
		name string
		rule Rule
	}{{"exact", exact}, {"approximate-100ms", approx}} {
		for _, parallelism := range []int{0, 4} {
			name := bc.name + "/serial"
			if parallelism > 0 {
				name = bc.name + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				cmds := &countingHook{}
				client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
				client.AddHook(cmds)
				b.Cleanup(func() { _ = client.Close() })
				a, err := NewApproximate(NewRedis(client), client, ApproximateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				runCtx, stop := context.WithCancel(ctx)
				var wg sync.WaitGroup
				wg.Go(func() { a.Run(runCtx, 10*time.Millisecond) })
				defer func() { stop(); wg.Wait() }()
				decide := func(key string) error {
					key = key[len(key)-1:] // "user:123" → "3": 10 busy keys
					_, err := a.Allow(ctx, []Request{{Rule: bc.rule, Key: key}})
					return err
				}
				if err := decide("warm-up"); err != nil { // loads the script
					b.Fatal(err)
				}
				cmds.commands.Store(0)
				measure(b, parallelism, nil, decide)
				if err := a.SyncNow(ctx); err != nil { // what is owed counts too
					b.Fatal(err)
				}
				b.ReportMetric(float64(cmds.commands.Load())/float64(b.N), "redis-cmds/decision")
			})
		}
	}
}
