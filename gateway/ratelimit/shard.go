package ratelimit

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Sharded splits the budget of a very hot key over Rule.Shards sub-keys with their own hash
// tags, so a Redis Cluster spreads it over its nodes. Each request goes to one shard picked at
// random, against Limit/Shards (the remainder to the first shards: the sub-limits add up to
// Limit). The price: never overshoot, but undershoot when traffic falls unevenly. A decision
// speaks of the whole rule: Limit is the rule's, Remaining the shard's times the shards (at
// most the capacity), Reset and RetryAfter the shard's. Safe for concurrent use if pick is.
// See docs/lessons/hot-keys.md, "Sharded buckets: more nodes".
type Sharded struct {
	inner Limiter
	pick  func(n int) int
}

// NewSharded wraps inner. pick returns a shard in [0, n); nil means math/rand/v2's IntN.
func NewSharded(inner Limiter, pick func(n int) int) *Sharded {
	if pick == nil {
		pick = rand.IntN
	}
	return &Sharded{inner: inner, pick: pick}
}

var _ Limiter = (*Sharded)(nil)

// Allow sends reqs to the inner limiter with each sharded rule rewritten to one shard; a
// request with none goes as it is.
func (s *Sharded) Allow(ctx context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	return s.allowValid(ctx, reqs)
}

func (s *Sharded) allowValid(ctx context.Context, reqs []Request) (Result, error) {
	if !slices.ContainsFunc(reqs, func(q Request) bool { return q.Rule.Shards > 1 }) {
		return allowValid(ctx, s.inner, reqs)
	}
	out := make([]Request, len(reqs))
	for i, q := range reqs {
		if q.Rule.Shards > 1 {
			q = shard(q, s.pick(q.Rule.Shards))
		}
		out[i] = q
	}
	res, err := allowValid(ctx, s.inner, out)
	if err != nil {
		return res, err
	}
	for i, q := range reqs {
		if q.Rule.Shards > 1 && i < len(res.Rules) {
			d := &res.Rules[i]
			d.Limit = q.Rule.Limit
			d.Remaining = min(q.Rule.capacity(), d.Remaining*q.Rule.Shards)
		}
	}
	return combine(res.Rules), nil
}

// Release passes leases to the inner limiter; they name their shard already.
func (s *Sharded) Release(ctx context.Context, leases ...Lease) error {
	return s.inner.Release(ctx, leases...)
}

// shard is q against shard i of its rule.
func shard(q Request, i int) Request {
	n := q.Rule.Shards
	if q.Rule.Mode == Partial { // the key, not its shard, is in the enforced share or not
		all := 0
		if Enforces(q.Rule.ID, q.Key, q.Rule.EnforcePercent) {
			all = 100
		}
		q.Rule.EnforcePercent = all
	}
	q.Key = shardKey(q.Key, i)
	q.Rule.Limit = part(q.Rule.Limit, n, i)
	if q.Rule.Burst > 0 {
		q.Rule.Burst = part(q.Rule.Burst, n, i)
	}
	q.Rule.Shards = 0
	return q
}

// part is shard i's share of total over n shards, at least 1.
func part(total, n, i int) int {
	p := total / n
	if i < total%n {
		p++
	}
	return max(1, p)
}

// shardKey gives shard i its own hash tag: "user:42" → "user:42#i",
// "{user:42}:route" → "{user:42#i}:route".
func shardKey(key string, i int) string {
	suffix := "#" + strconv.Itoa(i)
	if tag, ok := hashTag(key); ok {
		return strings.Replace(key, "{"+tag+"}", "{"+tag+suffix+"}", 1)
	}
	return key + suffix
}
