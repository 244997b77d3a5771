package ratelimit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"boxoffice.dev/platform/clock"
)

// HotKeys counts which rule and key each decision is for, in bounded memory (TopK), and
// publishes every Interval what it counted to a sorted set in Redis that every replica adds
// to, so Top reads the whole gateway's hottest keys in one call. It also marks the keys that
// took a large share of this replica's decisions as hot, and lets a rule with LeaseWhenHot
// lease only those. Safe for concurrent use. See docs/lessons/hot-keys.md, "Finding hot keys".
type HotKeys struct {
	inner  Limiter
	client redis.UniversalClient // nil: counted here only
	o      HotKeysOptions

	mu  sync.Mutex
	cur *TopK[hotKey]

	hot atomic.Pointer[map[hotKey]float64] // the keys hot at the last publication, by share
}

// hotKey is a rule and a key: a struct, so counting one allocates nothing.
type hotKey struct{ rule, key string }

// HotKeysOptions tune HotKeys; zero fields take the defaults listed.
type HotKeysOptions struct {
	// Counters is TopK's k: keys over a 1/Counters share of the decisions are never missed.
	// Default 200.
	Counters int
	// Interval is how often the counts are published and the hot set renewed; default 2s.
	Interval time.Duration
	// Window is how far back Top looks, at least Interval; default 10s.
	Window time.Duration
	// HotShare is the share of this replica's decisions over an Interval from which a key is
	// hot, if it also had MinHot of them; defaults 0.05 and 100.
	HotShare float64
	MinHot   int64
	// Clock is the time source; the zero Clock is time.Now.
	Clock clock.Clock
	// Meter receives ratelimit.hot_key.share, this replica's hot keys and their share of its
	// decisions (at most 1/HotShare series at a time); nil means none.
	Meter metric.MeterProvider
}

// hotKeysKey is the prefix of the sorted sets Top reads, one per Window: every key shares
// one hash tag, so a publication is one pipeline on one Redis Cluster node.
const hotKeysKey = "rl:{hotkeys}:"

// NewHotKeys wraps inner, publishing to client (nil: Top reads this replica's counts only).
func NewHotKeys(inner Limiter, client redis.UniversalClient, o HotKeysOptions) (*HotKeys, error) {
	o.Counters = cmp.Or(o.Counters, 200)
	o.Interval = cmp.Or(o.Interval, 2*time.Second)
	o.Window = max(cmp.Or(o.Window, 10*time.Second), o.Interval)
	o.HotShare = cmp.Or(o.HotShare, 0.05)
	o.MinHot = cmp.Or(o.MinHot, 100)
	h := &HotKeys{inner: inner, client: client, o: o, cur: NewTopK[hotKey](o.Counters)}
	if o.Meter != nil {
		_, err := o.Meter.Meter(meterName).Float64ObservableGauge("ratelimit.hot_key.share",
			metric.WithDescription("This replica's hot keys by rule and key: their share of its decisions over the last interval."),
			metric.WithFloat64Callback(func(_ context.Context, obs metric.Float64Observer) error {
				if m := h.hot.Load(); m != nil {
					for k, share := range *m {
						obs.Observe(share, metric.WithAttributes(attribute.String("rule", k.rule), attribute.String("key", k.key)))
					}
				}
				return nil
			}))
		if err != nil {
			return nil, fmt.Errorf("ratelimit metrics: %w", err)
		}
	}
	return h, nil
}

var _ Limiter = (*HotKeys)(nil)

// Allow counts reqs and decides them on the inner limiter. A rule with LeaseWhenHot goes
// there without its lease unless its key is hot.
func (h *HotKeys) Allow(ctx context.Context, reqs []Request) (Result, error) {
	h.mu.Lock()
	for _, q := range reqs {
		h.cur.Add(hotKey{q.Rule.ID, q.Key})
	}
	h.mu.Unlock()
	cloned := false
	for i, q := range reqs {
		if q.Rule.LeaseWhenHot && q.Rule.Lease > 0 && !h.Hot(q.Rule.ID, q.Key) {
			if !cloned { // reqs is the caller's
				reqs, cloned = slices.Clone(reqs), true
			}
			reqs[i].Rule.Lease = 0
		}
	}
	return h.inner.Allow(ctx, reqs)
}

// Release releases on the inner limiter.
func (h *HotKeys) Release(ctx context.Context, leases ...Lease) error {
	return h.inner.Release(ctx, leases...)
}

// Hot reports whether key of rule was hot on this replica at the last publication.
func (h *HotKeys) Hot(rule, key string) bool {
	m := h.hot.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[hotKey{rule, key}]
	return ok
}

// Run publishes every Interval until ctx ends. A publication that fails (Redis away) is
// dropped: the hot set is still renewed from this replica's own counts.
func (h *HotKeys) Run(ctx context.Context) error {
	tick := time.NewTicker(h.o.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		_ = h.Publish(ctx)
	}
}

// Publish renews the hot set from the counts since the last call, adds them to the current
// window's sorted set in Redis, and starts counting afresh.
func (h *HotKeys) Publish(ctx context.Context) error {
	h.mu.Lock()
	top, total := h.cur.Top(), h.cur.Total()
	h.cur = NewTopK[hotKey](h.o.Counters)
	h.mu.Unlock()

	hot := map[hotKey]float64{}
	for _, kc := range top {
		// Count-Err is what the key surely had: a key is hot on its own decisions.
		if sure := kc.Count - kc.Err; sure >= h.o.MinHot && float64(sure) >= h.o.HotShare*float64(total) {
			hot[kc.Key] = float64(sure) / float64(total)
		}
	}
	h.hot.Store(&hot)
	if h.client == nil || total == 0 {
		return nil
	}
	set := h.windowKey(h.o.Clock.Now(), 0)
	ttl := 3 * h.o.Window
	_, err := h.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, kc := range top {
			p.ZIncrBy(ctx, set, float64(kc.Count), kc.Key.rule+"\x00"+kc.Key.key)
		}
		p.IncrBy(ctx, set+":total", total)
		p.Expire(ctx, set, ttl)
		p.Expire(ctx, set+":total", ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("ratelimit: publish hot keys: %w", err)
	}
	return nil
}

// windowKey is the sorted set of the window back windows before the one holding now.
func (h *HotKeys) windowKey(now time.Time, back int64) string {
	return hotKeysKey + strconv.FormatInt(now.UnixMilli()/h.o.Window.Milliseconds()-back, 10)
}

// HotKey is a key among the gateway's most decided: Decisions over the last one to two
// Windows, all replicas together, and their Share of every decision made then.
type HotKey struct {
	Rule      string  `json:"rule"`
	Key       string  `json:"key"`
	Decisions int64   `json:"decisions"`
	Share     float64 `json:"share"`
}

// Top returns the n keys with the most decisions over the current and the previous Window,
// across the replicas that publish to the same Redis, most first. Without Redis, it reads
// what this replica counted since its last publication.
func (h *HotKeys) Top(ctx context.Context, n int) ([]HotKey, error) {
	counts, total := map[string]int64{}, int64(0)
	if h.client == nil {
		h.mu.Lock()
		for _, kc := range h.cur.Top() {
			counts[kc.Key.rule+"\x00"+kc.Key.key] = kc.Count
		}
		total = h.cur.Total()
		h.mu.Unlock()
	} else {
		now := h.o.Clock.Now()
		for back := range int64(2) {
			set := h.windowKey(now, back)
			zs, err := h.client.ZRevRangeWithScores(ctx, set, 0, int64(h.o.Counters)-1).Result()
			if err != nil {
				return nil, fmt.Errorf("ratelimit: read hot keys: %w", err)
			}
			for _, z := range zs {
				counts[fmt.Sprint(z.Member)] += int64(z.Score)
			}
			t, err := h.client.Get(ctx, set+":total").Int64()
			if err != nil && err != redis.Nil {
				return nil, fmt.Errorf("ratelimit: read hot keys: %w", err)
			}
			total += t
		}
	}
	out := make([]HotKey, 0, len(counts))
	for member, c := range counts {
		rule, key, _ := strings.Cut(member, "\x00")
		k := HotKey{Rule: rule, Key: key, Decisions: c}
		if total > 0 {
			k.Share = float64(c) / float64(total)
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b HotKey) int {
		return cmp.Or(cmp.Compare(b.Decisions, a.Decisions), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Key, b.Key))
	})
	return out[:min(n, len(out))], nil
}
