package ratelimit

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// redisCounts is the CountStore of the gateway: one pipelined round trip per sync, an INCRBY
// per window pushed (whose reply is everyone's total) and a PEXPIRE, plus a GET of the
// previous window for a sliding_window. A window's count expires two windows after its push.
type redisCounts struct{ client redis.UniversalClient }

var _ CountStore = redisCounts{}

func (r redisCounts) exchange(ctx context.Context, due []*pushed) error {
	curs := make([]*redis.IntCmd, len(due))
	prevs := make([]*redis.StringCmd, len(due))
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range due {
			w := d.s.rule.Window
			for start, n := range d.sent {
				if start != d.curStart {
					p.IncrBy(ctx, syncKey(d.k, start), n)
					p.PExpire(ctx, syncKey(d.k, start), 2*w)
				}
			}
			curs[i] = p.IncrBy(ctx, syncKey(d.k, d.curStart), d.sent[d.curStart])
			p.PExpire(ctx, syncKey(d.k, d.curStart), 2*w)
			if d.s.rule.Algorithm == SlidingCounter {
				prevs[i] = p.Get(ctx, syncKey(d.k, d.curStart-w.Microseconds()))
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil { // Nil: a previous window nobody counted in
		return err
	}
	for i, d := range due {
		d.cur = curs[i].Val()
		if prevs[i] != nil {
			d.prev, _ = prevs[i].Int64() // absent: nothing was admitted then
		}
	}
	return nil
}

// MemoryCounts is a CountStore in this process's memory, for replicas that live in one
// process, as the algorithm lab's do: the sums Redis would answer, but nothing expires, so
// it suits a bounded replay, not a gateway. The zero MemoryCounts is ready; safe for
// concurrent use.
type MemoryCounts struct {
	mu sync.Mutex
	n  map[windowKey]int64
}

// windowKey is one window of an approximate rule and key, by its start in µs.
type windowKey struct {
	approxKey
	start int64
}

var _ CountStore = (*MemoryCounts)(nil)

func (m *MemoryCounts) exchange(_ context.Context, due []*pushed) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[windowKey]int64{}
	}
	for _, d := range due {
		for start, n := range d.sent {
			m.n[windowKey{d.k, start}] += n
		}
		d.cur = m.n[windowKey{d.k, d.curStart}]
		if d.s.rule.Algorithm == SlidingCounter {
			d.prev = m.n[windowKey{d.k, d.curStart - d.s.rule.Window.Microseconds()}]
		}
	}
	return nil
}
