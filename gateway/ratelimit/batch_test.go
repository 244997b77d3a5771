package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestRedisBatchesConcurrentDecisions: 64 requests decide at once on one token bucket of 10
// while Redis is stalled, so that K go alone and the rest queue; once Redis resumes, the
// queued ones leave together. Exactly 10 are allowed, and the 64 decisions take far fewer
// round trips than 64.
func TestRedisBatchesConcurrentDecisions(t *testing.T) {
	srv, store, hook, reader := countedRedis(t)
	rule := Rule{ID: "shared", Algorithm: TokenBucket, Limit: 10, Window: time.Hour}
	mustAllow(t, store, []Request{{Rule: rule, Key: "warm-up"}}) // loads the script
	before, _ := batchSizes(t, reader)
	trips := hook.trips.Load()

	const n = 64
	allowed := stalledBurst(t, store, n, []*redis.Client{srv.Client()}, func(int) []Request {
		return []Request{{Rule: rule, Key: "user:1"}}
	})
	if allowed != rule.Limit {
		t.Errorf("allowed %d of %d against a %d-token bucket, want exactly %d", allowed, n, rule.Limit, rule.Limit)
	}
	if got := hook.trips.Load() - trips; got >= n {
		t.Errorf("%d concurrent decisions took %d round trips, want fewer", n, got)
	}
	after, largest := batchSizes(t, reader)
	if got := after.requests - before.requests; got != n {
		t.Errorf("batch sizes add up to %d requests, want %d", got, n)
	}
	if want := int64(n - store.batch.slots); largest < want {
		t.Errorf("largest batch = %d requests, want at least %d (all those queued)", largest, want)
	}
}

// TestRedisBatchesUnderLoad: 1,000 decisions from 32 goroutines against a 100-token bucket,
// with batching and without (K = 0): exactly 100 allowed either way; with batching, fewer
// round trips than decisions, without, one per decision.
func TestRedisBatchesUnderLoad(t *testing.T) {
	tests := []struct {
		name    string
		slots   int // -1: the default
		batched bool
	}{
		{"batching", -1, true},
		{"no batching", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, store, hook, _ := countedRedis(t)
			if tt.slots >= 0 {
				store.batch.slots = tt.slots
			}
			rule := Rule{ID: "load", Algorithm: TokenBucket, Limit: 100, Window: time.Hour}
			mustAllow(t, store, []Request{{Rule: rule, Key: "warm-up"}}) // loads the script
			hook.trips.Store(0)
			const n = 1000
			if got := hammer(t, []*Redis{store}, []Request{{Rule: rule, Key: "user:42"}}, n); got != rule.Limit {
				t.Errorf("allowed %d of %d against a %d-token bucket, want exactly %d", got, n, rule.Limit, rule.Limit)
			}
			trips := hook.trips.Load()
			switch {
			case tt.batched && trips >= n:
				t.Errorf("%d decisions took %d round trips, want fewer", n, trips)
			case !tt.batched && trips != n:
				t.Errorf("%d decisions took %d round trips, want %d", n, trips, n)
			}
		})
	}
}

// TestRedisAloneGoesAlone: a request with nothing in flight is a batch of one, sent at once.
func TestRedisAloneGoesAlone(t *testing.T) {
	_, store, hook, reader := countedRedis(t)
	rule := Rule{ID: "alone", Algorithm: GCRA, Limit: 10, Window: time.Second}
	for i := range 3 {
		trips := hook.trips.Load()
		if res := mustAllow(t, store, []Request{{Rule: rule, Key: "user:1"}}); !res.Allowed {
			t.Fatalf("request %d alone: denied, want allowed", i)
		}
		want := int64(1)
		if i == 0 {
			want = 2 // an empty script cache: EVALSHA, then EVAL
		}
		if got := hook.trips.Load() - trips; got != want {
			t.Errorf("request %d alone took %d round trips, want %d", i, got, want)
		}
		sizes, largest := batchSizes(t, reader)
		if want := int64(i + 1); sizes.batches != want || sizes.requests != want || largest != 1 {
			t.Errorf("after %d requests alone: %d batches of %d requests, largest %d; want %d of %d, largest 1",
				i+1, sizes.batches, sizes.requests, largest, want, want)
		}
	}
}

// TestRedisBatchCallerLeavesAtItsContext: a request whose context ends while its batch is in
// flight returns at once with its context's error, and the others of the batch, on a longer
// deadline, still get their decisions.
func TestRedisBatchCallerLeavesAtItsContext(t *testing.T) {
	tests := []struct {
		name string
		// leave returns the leaving request's context and what ends it.
		leave func() (context.Context, context.CancelFunc)
		want  error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, context.Canceled},
		// Longer than the batch takes to leave, far shorter than the others' deadline.
		{"short deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 2*time.Second)
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testkit.StartRedis(t)
			// As the gateway's: calls end at their context's deadline.
			client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = client.Close() })
			store, reader := batchingRedis(t, client)
			rule := Rule{ID: "leave", Algorithm: TokenBucket, Limit: 100, Window: time.Hour}
			reqs := []Request{{Rule: rule, Key: "user:1"}}
			mustAllow(t, store, reqs) // loads the script

			resume := pauseScripts(t, srv.Client())
			long, cancelLong := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancelLong()
			leaving, leave := tt.leave()
			defer leave()
			const stay = 4
			var staying []<-chan outcome
			left := formBatch(t, store, reqs, func() {
				for range stay {
					staying = append(staying, decideAsync(long, store, reqs))
				}
			}, stay+1, leaving)
			// The batch has left the queue; wait until it is on its way (sizes are recorded
			// once the requests that gave up are left out), so that the request leaves a
			// batch in flight, not one still forming.
			testkit.Eventually(t, 10*time.Second, "the batch of all five is sent", func() bool {
				_, largest := batchSizes(t, reader)
				return largest == stay+1
			})

			if tt.want == context.Canceled {
				leave()
			}
			if got := <-left; !errors.Is(got.err, tt.want) {
				t.Fatalf("Allow of the leaving request = %v, %v; want %v", got.res.Allowed, got.err, tt.want)
			}
			for i, o := range staying {
				select {
				case got := <-o:
					t.Fatalf("request %d returned (%v, %v) while Redis was paused, want it waiting", i, got.res.Allowed, got.err)
				default:
				}
			}
			resume()
			for i, o := range staying {
				if got := <-o; got.err != nil || !got.res.Allowed {
					t.Errorf("request %d of the batch = %v, %v; want allowed, nil", i, got.res.Allowed, got.err)
				}
			}
			// The leaving request had left with its batch: it was sent, not skipped.
			if _, largest := batchSizes(t, reader); largest != stay+1 {
				t.Errorf("largest batch = %d requests, want %d (the leaving one among them)", largest, stay+1)
			}
		})
	}
}

// TestRedisBatchResendsUnknownScript: the script cache is flushed while a batch waits, so
// every call of the batch meets NOSCRIPT; each is sent again with the source and decided.
func TestRedisBatchResendsUnknownScript(t *testing.T) {
	srv := testkit.StartRedis(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	store, _ := batchingRedis(t, client)
	admin := srv.Client()
	ctx := context.Background()
	rule := Rule{ID: "reload", Algorithm: TokenBucket, Limit: 100, Window: time.Hour}
	reqs := []Request{{Rule: rule, Key: "user:1"}}
	mustAllow(t, store, []Request{{Rule: rule, Key: "warm-up"}}) // loads the script
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	resume := pauseScripts(t, admin)
	const n = 8
	var batch []<-chan outcome
	own := formBatch(t, store, reqs, func() {
		for range n - 1 {
			batch = append(batch, decideAsync(ctx, store, reqs))
		}
	}, n, ctx)
	batch = append(batch, own)
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	resume()
	// Every request spent a token of its own.
	remaining := make(map[int]bool)
	for i, o := range batch {
		got := <-o
		if got.err != nil || !got.res.Allowed {
			t.Fatalf("request %d of the batch = %v, %v; want allowed, nil", i, got.res.Allowed, got.err)
		}
		remaining[got.res.Remaining] = true
	}
	if len(remaining) != n {
		t.Errorf("the batch's %d requests saw %d distinct remaining budgets, want %d", n, len(remaining), n)
	}
	wantCalls(t, admin, "eval", n) // every call sent again with the source
}

// TestRedisClusterBatchesAcrossSlots: 48 requests of 8 users stalled on a three-master
// cluster, then released, so that one batch holds calls for many slots. Each request has a
// rule on its user and one on a shared IP, in two slots. The IP rule allows exactly its 20;
// each user's rule, never denying, spent one token per request of that user.
func TestRedisClusterBatchesAcrossSlots(t *testing.T) {
	rc := testkit.StartRedisCluster(t)
	store, reader := batchingRedis(t, rc.Client())
	// Windows long enough that no token comes back during the test.
	perUser := Rule{ID: "per-user", Algorithm: TokenBucket, Limit: 1000, Window: 1000 * time.Hour}
	perIP := Rule{ID: "per-ip", Algorithm: TokenBucket, Limit: 20, Window: 100 * time.Hour}
	request := func(user int) []Request {
		return []Request{{Rule: perUser, Key: fmt.Sprintf("user:%d", user)}, {Rule: perIP, Key: "ip:10.0.0.1"}}
	}
	slots := make(map[uint16]bool)
	for u := range 8 {
		if calls := store.split(storageKeys(request(u))); len(calls) != 2 {
			t.Fatalf("user:%d's request split into %d script calls, want 2 (the test needs two slots)", u, len(calls))
		}
		for _, key := range storageKeys(request(u)) {
			tag, _ := hashTag(key)
			slots[slot(tag)] = true
		}
	}
	if len(slots) < 4 {
		t.Fatalf("the requests' keys fall in %d slots, want several", len(slots))
	}
	mustAllow(t, store, []Request{{Rule: perUser, Key: "warm-up"}}) // loads the script
	before, _ := batchSizes(t, reader)

	var admins []*redis.Client
	for _, node := range rc.Nodes {
		admins = append(admins, node.Client())
	}
	const n = 48
	allowed := stalledBurst(t, store, n, admins, func(i int) []Request { return request(i % 8) })
	if allowed != perIP.Limit {
		t.Errorf("allowed %d of %d, want exactly %d (the per-IP limit)", allowed, n, perIP.Limit)
	}
	after, largest := batchSizes(t, reader)
	if got := after.batches - before.batches; got >= n {
		t.Errorf("%d requests went in %d round trips, want fewer", n, got)
	}
	if want := int64(n - store.batch.slots); largest < want {
		t.Errorf("largest batch = %d requests, want at least %d", largest, want)
	}
	for u := range 8 {
		res := mustAllow(t, store, request(u)[:1])
		if want := perUser.Limit - n/8 - 1; res.Remaining != want {
			t.Errorf("user:%d remaining = %d, want %d (%d spent before)", u, res.Remaining, want, n/8)
		}
	}
}

// stalledBurst sends n requests, request(i) for the i-th, at once while the servers of
// admins run no scripts, so that K go alone and the others queue, then lets them run, and
// counts the allowed requests. Every request must be decided.
func stalledBurst(t *testing.T, r *Redis, n int, admins []*redis.Client, request func(i int) []Request) (allowed int) {
	t.Helper()
	var resumes []func()
	for _, admin := range admins {
		resumes = append(resumes, pauseScripts(t, admin))
	}
	outcomes := make([]<-chan outcome, n)
	for i := range outcomes {
		outcomes[i] = decideAsync(context.Background(), r, request(i))
	}
	waitBatchState(t, r, r.batch.slots, n-r.batch.slots)
	for _, resume := range resumes {
		resume()
	}
	for i, o := range outcomes {
		got := <-o
		if got.err != nil {
			t.Fatalf("request %d: Allow = %v", i, got.err)
		}
		if got.res.Allowed {
			allowed++
		}
	}
	return allowed
}

// countedRedis starts a Redis server and returns it with a limiter (see batchingRedis) on
// a client whose script round trips hook counts.
func countedRedis(t *testing.T) (*testkit.Redis, *Redis, *scriptTrips, *sdkmetric.ManualReader) {
	t.Helper()
	srv := testkit.StartRedis(t)
	client := srv.Client()
	hook := &scriptTrips{}
	client.AddHook(hook)
	store, reader := batchingRedis(t, client)
	return srv, store, hook, reader
}

// batchingRedis is a limiter on client with its batch sizes recorded, whose test fails
// unless every round trip has ended and no goroutine of it is left when it ends.
func batchingRedis(t *testing.T, client redis.UniversalClient) (*Redis, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	store, err := NewRedisWith(client, RedisOptions{Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		testkit.Eventually(t, 10*time.Second, "no batch in flight, no drain goroutine", func() bool {
			store.batch.mu.Lock()
			idle := store.batch.inFlight == 0 && len(store.batch.queue) == 0
			store.batch.mu.Unlock()
			return idle && !strings.Contains(goroutines(), "ratelimit.(*Redis).drain")
		})
	})
	return store, reader
}

// goroutines are the stacks of all goroutines.
func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// pauseScripts stops admin's Redis from running scripts (and any write) of every other
// client until resume, or for at most 20 seconds. Resuming twice is harmless.
func pauseScripts(t *testing.T, admin *redis.Client) (resume func()) {
	t.Helper()
	ctx := context.Background()
	if err := admin.Do(ctx, "client", "pause", 20_000, "write").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := admin.Do(ctx, "client", "unpause").Err(); err != nil {
				t.Errorf("CLIENT UNPAUSE: %v", err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// formBatch makes a batch leave while Redis is paused: it fills every slot with a request
// of a short deadline, lets queue start the requests that should queue, adds one of its
// own on ctx, then lets the slot holders time out, which sends the queue, n requests in
// all, as one batch. It returns once the batch is in flight, with the outcome of its own
// request. The client must end calls at their deadline.
func formBatch(t *testing.T, r *Redis, reqs []Request, queue func(), n int, ctx context.Context) <-chan outcome {
	t.Helper()
	k := r.batch.slots
	var holders []<-chan outcome
	for range k {
		short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		t.Cleanup(cancel)
		holders = append(holders, decideAsync(short, r, []Request{{Rule: reqs[0].Rule, Key: "slot-holder"}}))
	}
	waitBatchState(t, r, k, 0)
	queue()
	own := decideAsync(ctx, r, reqs)
	waitBatchState(t, r, k, n)
	for _, h := range holders {
		if got := <-h; !errors.Is(got.err, context.DeadlineExceeded) {
			t.Fatalf("slot holder on a paused Redis = %v, %v; want %v", got.res.Allowed, got.err, context.DeadlineExceeded)
		}
	}
	waitBatchState(t, r, 1, 0)
	return own
}

// waitBatchState waits until r has inFlight round trips in flight and queued requests
// waiting.
func waitBatchState(t *testing.T, r *Redis, inFlight, queued int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("%d round trips in flight, %d requests queued", inFlight, queued), func() bool {
		r.batch.mu.Lock()
		defer r.batch.mu.Unlock()
		return r.batch.inFlight == inFlight && len(r.batch.queue) == queued
	})
}

// scriptTrips counts the round trips that carry script calls: a pipeline is one. Unlike
// countingHook it leaves out the handshake of each new connection.
type scriptTrips struct{ trips atomic.Int64 }

func (h *scriptTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}
func (h *scriptTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 {
			h.count(cmds[0])
		}
		return next(ctx, cmds)
	}
}

func (h *scriptTrips) count(cmd redis.Cmder) {
	if name := cmd.Name(); name == "evalsha" || name == "eval" {
		h.trips.Add(1)
	}
}

var _ redis.Hook = (*scriptTrips)(nil)

// outcome is what Allow returned.
type outcome struct {
	res Result
	err error
}

// decideAsync runs Allow on a goroutine of its own.
func decideAsync(ctx context.Context, l Limiter, reqs []Request) <-chan outcome {
	c := make(chan outcome, 1)
	go func() {
		res, err := l.Allow(ctx, reqs)
		c <- outcome{res, err}
	}()
	return c
}

// sizes sums the batch-size histogram.
type sizes struct{ batches, requests int64 }

// batchSizes reads the batch-size histogram: how many batches, how many requests in all,
// and the largest batch.
func batchSizes(t *testing.T, reader *sdkmetric.ManualReader) (sizes, int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var s sizes
	var largest int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[int64])
			if !ok || m.Name != "ratelimit.redis.batch.size" {
				continue
			}
			for _, dp := range h.DataPoints {
				s.batches += int64(dp.Count)
				s.requests += dp.Sum
				if v, ok := dp.Max.Value(); ok && v > largest {
					largest = v
				}
			}
		}
	}
	return s, largest
}

// TestRedisBudgetCountsFromTheWrite: a request's round-trip budget starts when its calls
// are written, not when it starts waiting for a slot; a request that waits longer than its
// queue budget returns ErrNoSlot without ever reaching the store.
func TestRedisBudgetCountsFromTheWrite(t *testing.T) {
	srv := testkit.StartRedis(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	store, _ := batchingRedis(t, client)
	rule := Rule{ID: "budget", Algorithm: TokenBucket, Limit: 100, Window: time.Hour}
	reqs := []Request{{Rule: rule, Key: "user:1"}}
	mustAllow(t, store, reqs) // loads the script
	holdSlots := func(roundTrip time.Duration) []<-chan outcome {
		var holders []<-chan outcome
		for range store.batch.slots {
			ctx := withBudget(context.Background(), &budget{roundTrip: roundTrip, queueWait: time.Minute})
			holders = append(holders, decideAsync(ctx, store, []Request{{Rule: rule, Key: "slot-holder"}}))
		}
		waitBatchState(t, store, store.batch.slots, 0)
		return holders
	}

	t.Run("queued past its queue budget", func(t *testing.T) {
		resume := pauseScripts(t, srv.Client())
		holders := holdSlots(3 * time.Second)
		ctx := withBudget(context.Background(), &budget{roundTrip: time.Minute, queueWait: 100 * time.Millisecond})
		got := <-decideAsync(ctx, store, reqs)
		if !errors.Is(got.err, ErrNoSlot) || judge(got.err) != callNotCounted {
			t.Fatalf("Allow queued past its wait = %v; want ErrNoSlot, not counted against the store", got.err)
		}
		resume()
		for _, h := range holders {
			<-h
		}
		waitBatchState(t, store, 0, 0)
	})

	t.Run("round trip from the write", func(t *testing.T) {
		resume := pauseScripts(t, srv.Client())
		holders := holdSlots(300 * time.Millisecond) // they time out on the paused store
		start := time.Now()
		// A round trip of 250ms: counted from the call, it would end before the holders'
		// 300ms are up and the request is even sent.
		const roundTrip = 250 * time.Millisecond
		ctx := withBudget(context.Background(), &budget{roundTrip: roundTrip, queueWait: time.Minute})
		queued := decideAsync(ctx, store, reqs)
		waitBatchState(t, store, store.batch.slots, 1)
		for _, h := range holders {
			if got := <-h; !errors.Is(got.err, context.DeadlineExceeded) {
				t.Fatalf("slot holder on a paused store = %v, want its round trip's deadline", got.err)
			}
		}
		waitBatchState(t, store, 1, 0) // the queued request is on its way
		resume()
		got := <-queued
		if got.err != nil || !got.res.Allowed {
			t.Fatalf("queued request = %v, %v; want allowed: its round trip began when it was written", got.res.Allowed, got.err)
		}
		if waited := time.Since(start); waited <= roundTrip {
			t.Fatalf("queued request returned after %v, want after more than its round trip of %v", waited, roundTrip)
		}
	})
}
