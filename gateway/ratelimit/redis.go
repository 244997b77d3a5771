package ratelimit

import (
	"context"
	"crypto/rand"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/decide.lua
var decideLua string

// decideScript is sent once per Redis server: calls go by EVALSHA, and a server that does not
// know the script (restarted, flushed) answers NOSCRIPT, upon which the source is sent again.
var decideScript = redis.NewScript(decideLua)

// Redis is a Limiter whose state lives in Redis, shared by every gateway replica: the limits
// are global, not per replica. Each decision is one Lua script run, so the read-modify-write
// is atomic across replicas, and the time is the server's TIME, so replicas with skewed
// clocks agree. Every key carries a TTL and vanishes once idle.
//
// All rules of a request go in one round trip: one script call on a single server, or on a
// Cluster when their keys share a hash slot (give them one {tag}); otherwise one script call
// per slot, all sent in one pipeline. Within a call, a request denied by one rule spends
// nothing from the others. Across slots there is no such atomicity: a call may spend its
// budgets while another slot's call denies the request. The overshoot is bounded: each
// denied request may spend its cost once from each rule outside the slot of the rule that
// denied it (TestRedisClusterSplitSlotsOvershoot measures it).
//
// Redis returns store errors as they are; Failsafe turns them into fallback decisions.
// Redis is safe for concurrent use.
type Redis struct {
	client  redis.UniversalClient
	cluster bool
	// now, set only by tests, replaces the server's TIME with a virtual clock.
	now func() time.Time
}

// NewRedis returns a limiter on client, a *redis.Client, *redis.ClusterClient or any other
// UniversalClient.
func NewRedis(client redis.UniversalClient) *Redis {
	_, cluster := client.(*redis.ClusterClient)
	return &Redis{client: client, cluster: cluster}
}

var _ Limiter = (*Redis)(nil)

// boundByDeadline reports whether the client ends calls at their context's deadline by
// itself (ContextTimeoutEnabled): Failsafe then need not run them on a goroutine of their own.
func (r *Redis) boundByDeadline() bool {
	switch c := r.client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// scriptCall is one run of decide.lua: the requests it decides, by index, and its arguments.
type scriptCall struct {
	reqs []int
	keys []string
	args []any
}

// Allow decides reqs in one round trip.
func (r *Redis) Allow(ctx context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	if len(reqs) == 0 {
		return combine(nil), nil
	}
	now := ""
	if r.now != nil {
		now = strconv.FormatInt(r.now().UnixMicro(), 10)
	}
	var leases []string // lease ids of concurrency rules, by request
	calls := r.split(reqs)
	for c := range calls {
		call := &calls[c]
		call.keys = make([]string, 0, len(call.reqs))
		call.args = append(make([]any, 0, 1+7*len(call.reqs)), now)
		for _, i := range call.reqs {
			q := reqs[i]
			lease := ""
			if q.Rule.Algorithm == Concurrency {
				if leases == nil {
					leases = make([]string, len(reqs))
				}
				lease = rand.Text()
				leases[i] = lease
			}
			p := q.Rule.params()
			mode := string(q.Rule.mode())
			if q.Charge {
				mode = "charge"
			}
			call.keys = append(call.keys, storageKey(q.Rule.ID, q.Key))
			call.args = append(call.args, string(q.Rule.Algorithm), p.limit, p.window, p.burst, q.cost(), mode, lease)
		}
	}
	replies, err := r.run(ctx, calls)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: decide: %w", err)
	}
	ds := make([]Decision, len(reqs))
	for c, call := range calls {
		out := replies[c]
		if len(out) != 1+4*len(call.reqs) {
			return Result{}, fmt.Errorf("ratelimit: decide: %d values in reply, want %d", len(out), 1+4*len(call.reqs))
		}
		admitted := out[0] == 1
		for j, i := range call.reqs {
			v := out[1+4*j:]
			ds[i] = verdict{allowed: v[0] == 1, remaining: v[1], reset: v[2], retry: v[3]}.decision(reqs[i], PathStore)
			if admitted && ds[i].Allowed && leases != nil && leases[i] != "" {
				ds[i].Lease = &Lease{Rule: reqs[i].Rule.ID, Key: reqs[i].Key, ID: leases[i]}
			}
		}
	}
	return combine(ds), nil
}

// Release frees concurrency leases, in one round trip.
func (r *Redis) Release(ctx context.Context, leases ...Lease) error {
	if len(leases) == 0 {
		return nil
	}
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, l := range leases {
			p.ZRem(ctx, storageKey(l.Rule, l.Key), l.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ratelimit: release: %w", err)
	}
	return nil
}

// split groups requests into script calls: one call, unless this is a Cluster and the keys
// fall in several hash slots.
func (r *Redis) split(reqs []Request) []scriptCall {
	if !r.cluster {
		all := make([]int, len(reqs))
		for i := range all {
			all[i] = i
		}
		return []scriptCall{{reqs: all}}
	}
	var calls []scriptCall
	bySlot := make(map[uint16]int)
	for i, q := range reqs {
		tag, _ := hashTag(tagged(q.Key))
		s := slot(tag)
		c, ok := bySlot[s]
		if !ok {
			c = len(calls)
			bySlot[s] = c
			calls = append(calls, scriptCall{})
		}
		calls[c].reqs = append(calls[c].reqs, i)
	}
	return calls
}

// run sends the script calls: alone, or together in one pipeline.
func (r *Redis) run(ctx context.Context, calls []scriptCall) ([][]int64, error) {
	if len(calls) == 1 {
		out, err := decideScript.Run(ctx, r.client, calls[0].keys, calls[0].args...).Int64Slice()
		if err != nil {
			return nil, err
		}
		return [][]int64{out}, nil
	}
	cmds := make([]*redis.Cmd, len(calls))
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = decideScript.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Some server lacks the script: send the source to those calls, once.
		_, err = r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, c := range calls {
				if redis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") {
					cmds[i] = decideScript.Eval(ctx, p, c.keys, c.args...)
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	outs := make([][]int64, len(calls))
	for i, cmd := range cmds {
		if outs[i], err = cmd.Int64Slice(); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// slot is the Redis Cluster hash slot of a hash tag: CRC16 (XMODEM) modulo 16384.
func slot(tag string) uint16 {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}
