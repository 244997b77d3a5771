package ratelimit

import (
	"context"
	_ "embed"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/announce.lua
var announceLua string

var announceScript = redis.NewScript(announceLua)

// replicasKey is the sorted set of live gateway replicas, scored by when each announcement
// expires.
const replicasKey = "rl:{replicas}"

// Replicas announces this gateway replica in Redis and counts the live ones, so that the
// fallback limiter can take its share, limit/N, while Redis is down.
//
// Each replica renews its entry every TTL/3; an entry not renewed within TTL no longer
// counts. While Redis is unreachable the last known N is kept: that is exactly when the
// fallback needs it. The zero value is not usable; call NewReplicas. Safe for concurrent use.
type Replicas struct {
	client redis.UniversalClient
	id     string
	ttl    time.Duration
	n      atomic.Int64
}

// NewReplicas returns the announcer of replica id; ttl 0 means 10s. Until the first
// announcement, Count is 1.
func NewReplicas(client redis.UniversalClient, id string, ttl time.Duration) *Replicas {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	r := &Replicas{client: client, id: id, ttl: ttl}
	r.n.Store(1)
	return r
}

// Announce renews this replica's entry, drops the expired ones and updates Count, in one
// round trip.
func (r *Replicas) Announce(ctx context.Context) (int, error) {
	n, err := announceScript.Run(ctx, r.client, []string{replicasKey}, r.id, r.ttl.Microseconds()).Int64()
	if err != nil {
		return r.Count(), fmt.Errorf("ratelimit: announce replica: %w", err)
	}
	r.n.Store(max(1, n))
	return int(n), nil
}

// Run announces every TTL/3 until ctx is done, then withdraws the entry so the others'
// share grows at once. Failed announcements keep the last known count.
func (r *Replicas) Run(ctx context.Context) error {
	tick := time.NewTicker(r.ttl / 3)
	defer tick.Stop()
	for {
		_, _ = r.Announce(ctx)
		select {
		case <-ctx.Done():
			leave, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			return r.client.ZRem(leave, replicasKey, r.id).Err()
		case <-tick.C:
		}
	}
}

// Count is the number of live replicas at the last successful announcement, at least 1.
func (r *Replicas) Count() int { return int(r.n.Load()) }
