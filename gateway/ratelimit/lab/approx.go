package lab

import (
	"context"
	"fmt"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/clock"
)

// DefaultReplicas is Config.Replicas when Sync is set and Replicas is 0; MaxReplicas bounds
// it, each replica holding its own limiter for the replay.
const (
	DefaultReplicas = 3
	MaxReplicas     = 100
)

// ApproxLabel names the lab's line for alg in approximate mode (Config.Sync): the algorithm,
// then "~" with the sync interval and "×" the replicas, e.g. "fixed_window ~100ms×3".
func ApproxLabel(alg ratelimit.Algorithm, sync time.Duration, replicas int) string {
	return fmt.Sprintf("%s ~%v×%d", alg, sync, replicas)
}

// approximable reports whether alg has an approximate mode (ratelimit.Rule.Sync).
func approximable(alg ratelimit.Algorithm) bool {
	return alg == ratelimit.FixedWindow || alg == ratelimit.SlidingCounter
}

// replayApprox runs trace through alg on cfg.Replicas ratelimit.Approximate replicas, each
// over its own in-memory limiter, sharing one ratelimit.MemoryCounts for a store: requests
// are dealt round-robin, as a load balancer does, and every cfg.Sync of the virtual clock
// each replica syncs in turn, before the requests of that instant. With skipQuiet, the sync
// rounds after two with no request between are skipped: they would read what the last one
// read (a test holds that the results are the same).
func replayApprox(trace []Request, cfg Config, alg ratelimit.Algorithm, skipQuiet bool) (Result, error) {
	rule := ratelimit.Rule{ID: string(alg), Algorithm: alg, Limit: cfg.Limit, Window: cfg.Window, Burst: cfg.Burst, Sync: cfg.Sync}
	if err := rule.Validate(); err != nil {
		return Result{}, err
	}
	var now time.Time
	c := clock.Func(func() time.Time { return now })
	counts := &ratelimit.MemoryCounts{}
	replicas := make([]*ratelimit.Approximate, cfg.Replicas)
	for i := range replicas {
		a, err := ratelimit.NewApproximate(ratelimit.NewMemory(c), nil, ratelimit.ApproximateOptions{Clock: c, Counts: counts})
		if err != nil {
			return Result{}, err
		}
		replicas[i] = a
	}
	res := Result{Algorithm: alg, Label: ApproxLabel(alg, cfg.Sync, cfg.Replicas), Replicas: cfg.Replicas,
		Decisions: make([]bool, len(trace)), Remaining: make([]int, len(trace))}
	type window struct {
		key   string
		start time.Duration
	}
	admitted := map[window]int{}                       // units per key and window, for Over
	sinceSync := make([]map[string]int, len(replicas)) // units per replica and key since its last sync
	for i := range sinceSync {
		sinceSync[i] = map[string]int{}
	}
	most := 0 // the most one replica admitted for one key between two syncs
	next, quiet := cfg.Sync, 0
	ctx := context.Background()
	for i, q := range trace {
		for next <= q.At {
			if skipQuiet && quiet >= 2 {
				next = q.At - q.At%cfg.Sync + cfg.Sync
				break
			}
			now = time.UnixMicro(0).Add(next)
			for j, a := range replicas {
				if err := a.SyncNow(ctx); err != nil {
					return Result{}, fmt.Errorf("%s: sync at %v: %w", res.Label, next, err)
				}
				clear(sinceSync[j])
			}
			next += cfg.Sync
			quiet++
		}
		quiet = 0
		now = time.UnixMicro(0).Add(q.At)
		r := i % len(replicas)
		d, err := replicas[r].Allow(ctx, []ratelimit.Request{{Rule: rule, Key: q.Key, Cost: q.Cost}})
		if err != nil {
			return Result{}, fmt.Errorf("%s: request %d: %w", res.Label, i+1, err)
		}
		res.Decisions[i], res.Remaining[i] = d.Allowed, d.Rules[0].Remaining
		if !d.Allowed {
			res.Denied++
			continue
		}
		res.Allowed++
		w := window{q.Key, q.At - q.At%cfg.Window}
		admitted[w] += q.Cost
		res.Over = max(res.Over, admitted[w]-cfg.Limit)
		sinceSync[r][q.Key] += q.Cost
		most = max(most, sinceSync[r][q.Key])
	}
	res.Note = approxNote(cfg, most)
	return res, nil
}

// approxNote states the overshoot's bound (docs/lessons/distributed.md, "Counting locally,
// syncing often") for cfg, and what it comes to on the trace replayed.
func approxNote(cfg Config, most int) string {
	if cfg.Replicas == 1 {
		return fmt.Sprintf("one replica synced every %v reads back only its own counts: it decides as the exact algorithm", cfg.Sync)
	}
	return fmt.Sprintf("%d replicas synced every %v: a window may admit the limit + %d × what one replica admits between two syncs; here at most %d + %d × %d = %d",
		cfg.Replicas, cfg.Sync, cfg.Replicas-1, cfg.Limit, cfg.Replicas-1, most, cfg.Limit+(cfg.Replicas-1)*most)
}

// checkApprox reports a Sync or Replicas the approximate lines cannot use.
func (cfg Config) checkApprox() error {
	switch {
	case cfg.Sync == 0 && cfg.Replicas != 0:
		return fmt.Errorf("replicas %d: the approximate lines need a sync", cfg.Replicas)
	case cfg.Sync == 0:
		return nil
	case cfg.Parent > 0:
		return fmt.Errorf("approximate lines and a parent do not combine: a level of a hierarchy is counted exactly")
	case cfg.Replicas < 0 || cfg.Replicas > MaxReplicas:
		return fmt.Errorf("replicas %d: want 1 to %d (0 means %d)", cfg.Replicas, MaxReplicas, DefaultReplicas)
	}
	if err := ratelimit.CheckSync(cfg.Sync, cfg.Window); err != nil {
		return fmt.Errorf("sync %w", err)
	}
	return nil
}
