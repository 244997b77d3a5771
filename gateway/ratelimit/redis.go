package ratelimit

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Redis is a Limiter whose state lives in Redis, shared by every gateway replica, so limits
// are global. Each decision is one Lua script run (atomic across replicas, timed by Redis's
// TIME, every key with a TTL) holding only the algorithms its rules use; all rules of a
// request go in one round trip, and concurrent requests share round trips (batcher). The
// trade-off: on a Cluster, rules in different hash slots are not atomic together, with a
// bounded overshoot. Store errors are returned as they are; Failsafe turns them into fallback
// decisions. Safe for concurrent use. See docs/lessons/distributed.md.
type Redis struct {
	client  redis.UniversalClient
	cluster bool
	batch   batcher
	// now, set only by tests, replaces the server's TIME with a virtual clock.
	now func() time.Time
}

// RedisOptions configures a Redis limiter; the zero value gives the defaults.
type RedisOptions struct {
	// Meter receives the batch sizes (ratelimit.redis.batch.size); nil means none.
	Meter metric.MeterProvider
}

// NewRedis returns a limiter on client, a *redis.Client, *redis.ClusterClient or any other
// UniversalClient, without metrics.
func NewRedis(client redis.UniversalClient) *Redis {
	return newRedis(client, noop.Int64Histogram{})
}

// NewRedisWith returns a limiter on client configured by opts.
func NewRedisWith(client redis.UniversalClient, opts RedisOptions) (*Redis, error) {
	sizes, err := newBatchSizes(opts.Meter)
	if err != nil {
		return nil, err
	}
	return newRedis(client, sizes), nil
}

func newRedis(client redis.UniversalClient, sizes metric.Int64Histogram) *Redis {
	_, cluster := client.(*redis.ClusterClient)
	return &Redis{client: client, cluster: cluster, batch: batcher{slots: defaultSlots(), sizes: sizes}}
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

// scriptCall is one run of a decide script: the requests it decides and the command.
type scriptCall struct {
	// reqs are the indexes of the requests it decides, in order; nil means all of them.
	reqs []int
	// args are the whole command, EVALSHA, digest, keys and arguments, in one slice, which
	// go-redis sends as it is.
	args   []any
	script *luaScript
	cmd    *redis.IntSliceCmd
}

// size is the number of requests the call decides, out of n.
func (c *scriptCall) size(n int) int {
	if c.reqs == nil {
		return n
	}
	return len(c.reqs)
}

// index is the request that the call decides k-th.
func (c *scriptCall) index(k int) int {
	if c.reqs == nil {
		return k
	}
	return c.reqs[k]
}

// Allow decides reqs in one round trip.
func (r *Redis) Allow(ctx context.Context, reqs []Request) (Result, error) {
	if err := validate(reqs); err != nil {
		return Result{}, err
	}
	return r.allowValid(ctx, reqs)
}

func (r *Redis) allowValid(ctx context.Context, reqs []Request) (Result, error) {
	if len(reqs) == 0 {
		return combine(nil), nil
	}
	var now any // a virtual time, from tests only
	if r.now != nil {
		now = r.now().UnixMicro()
	}
	up := parents(reqs)
	var keys, ceilings []string
	if up == nil {
		keys = make([]string, len(reqs))
		for i, q := range reqs {
			keys[i] = storageKey(q.Rule.ID, q.Key)
		}
	} else {
		keys, ceilings = chainKeys(reqs, up)
	}
	leases := leaseIDs(reqs)
	var one [1]scriptCall // the usual case, without an allocation
	calls := one[:]
	if r.cluster {
		calls = r.split(keys)
	}
	for c := range calls {
		var err error
		if up == nil {
			err = calls[c].encode(reqs, keys, leases, now)
		} else {
			err = calls[c].encodeChains(reqs, up, keys, ceilings, leases, now)
		}
		if err != nil {
			return Result{}, err
		}
	}
	if err := r.send(ctx, calls); err != nil {
		return Result{}, fmt.Errorf("ratelimit: decide: %w", err)
	}
	ds := make([]Decision, len(reqs))
	for c := range calls {
		if err := calls[c].decode(reqs, leases, ds); err != nil {
			return Result{}, err
		}
	}
	return combine(ds), nil
}

// leaseIDs draws the id of the slot each Concurrency request would take, by request; nil
// when there are none.
func leaseIDs(reqs []Request) []string {
	var ids []string
	for i, q := range reqs {
		if q.Rule.Algorithm == Concurrency {
			if ids == nil {
				ids = make([]string, len(reqs))
			}
			ids[i] = rand.Text()
		}
	}
	return ids
}

// The script's words, boxed once: an any made from a string variable allocates, one made
// from a constant does not.
var algorithmArgs = func() map[Algorithm]any {
	m := make(map[Algorithm]any, len(Algorithms))
	for _, a := range Algorithms {
		m[a] = string(a)
	}
	return m
}()

// encode picks the call's script and writes its command: EVALSHA sha numkeys key…, then 7
// arguments per rule (see scripts/decide.lua), then now if not nil.
func (c *scriptCall) encode(reqs []Request, keys, leases []string, now any) error {
	n := c.size(len(reqs))
	var set algorithmSet
	for k := range n {
		set = set.with(reqs[c.index(k)].Rule.Algorithm)
	}
	script, err := decideScript(set)
	if err != nil {
		return err
	}
	c.script = script
	c.args = make([]any, 3+n, 3+n+7*n+1)
	c.args[0], c.args[1], c.args[2] = "evalsha", script.sha, n
	for k := range n {
		c.args[3+k] = keys[c.index(k)]
	}
	for k := range n {
		i := c.index(k)
		q := reqs[i]
		p := q.Rule.params()
		c.args = append(c.args, algorithmArgs[q.Rule.Algorithm], p.limit, p.window, p.burst, q.cost(), modeArg(q), extraArg(p, leases, i))
	}
	if now != nil {
		c.args = append(c.args, now)
	}
	return nil
}

// extraArg is request i's 7th argument, as the script reads it: its lease id, or its rule's
// queue's max delay (µs), or "".
func extraArg(p params, leases []string, i int) any {
	switch {
	case leases != nil && leases[i] != "":
		return leases[i]
	case p.maxDelay > 0:
		return p.maxDelay
	}
	return ""
}

// modeArg is a request's mode as the script reads it: enforce, shadow or charge.
func modeArg(q Request) any {
	switch {
	case q.Charge:
		return "charge"
	case !q.enforced():
		return "shadow"
	}
	return "enforce"
}

// decode reads the call's reply into the decisions of its requests.
func (c *scriptCall) decode(reqs []Request, leases []string, ds []Decision) error {
	n := c.size(len(reqs))
	out := c.cmd.Val()
	if len(out) != 1+4*n {
		return fmt.Errorf("ratelimit: decide: %d values in reply, want %d", len(out), 1+4*n)
	}
	admitted := out[0] == 1
	for k := range n {
		i, v := c.index(k), out[1+4*k:]
		// v[0] is 1 for allowed, plus 2 when a level of a hierarchy reports its ceiling.
		ds[i] = verdict{allowed: v[0]&1 == 1, remaining: v[1], reset: v[2], retry: v[3]}.decision(reqs[i], PathStore)
		if v[0]&2 != 0 {
			ds[i].Limit, ds[i].Borrowing = reqs[i].Rule.ceiling(), true
		}
		if admitted && ds[i].Allowed && leases != nil && leases[i] != "" {
			ds[i].Lease = &Lease{Rule: reqs[i].Rule.ID, Key: reqs[i].Key, ID: leases[i]}
		}
	}
	return nil
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

// split groups requests, by their storage keys, into script calls on a Cluster: one per hash
// slot.
func (r *Redis) split(keys []string) []scriptCall {
	var calls []scriptCall
	bySlot := make(map[uint16]int)
	for i, key := range keys {
		tag, _ := hashTag(key) // storage keys always hold their client's {tag}
		s := slot(tag)
		c, ok := bySlot[s]
		if !ok {
			c = len(calls)
			bySlot[s] = c
			calls = append(calls, scriptCall{reqs: []int{}})
		}
		calls[c].reqs = append(calls[c].reqs, i)
	}
	if len(calls) == 1 {
		calls[0].reqs = nil // all of them
	}
	return calls
}

// run sends one request's script calls: alone, or together in one pipeline. A call whose
// script the server does not know is sent again with the source.
func (r *Redis) run(ctx context.Context, calls []scriptCall) error {
	if len(calls) > 1 {
		r.pipeline(ctx, calls)
		return callsErr(calls)
	}
	call := &calls[0]
	call.cmd = newScriptCmd(ctx, call.args)
	err := r.client.Process(ctx, call.cmd)
	if unknownScript(err) {
		call.withSource(ctx)
		err = r.client.Process(ctx, call.cmd)
	}
	return err
}

// unknownScript reports a NOSCRIPT error: the server does not have the script (yet).
func unknownScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// withSource turns the call into an EVAL of the script's source.
func (c *scriptCall) withSource(ctx context.Context) {
	c.args[0], c.args[1] = "eval", c.script.src
	c.cmd = newScriptCmd(ctx, c.args)
}

// newScriptCmd is an EVAL or EVALSHA whose reply is a list of integers, read as such rather
// than as a list of interfaces. Its first key is its fourth word, where a Cluster client
// looks for the slot.
func newScriptCmd(ctx context.Context, args []any) *redis.IntSliceCmd {
	cmd := redis.NewIntSliceCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	return cmd
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
