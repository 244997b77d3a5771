// Package lab is the algorithm lab: it replays a request trace through every rate-limiting
// algorithm side by side, on the very in-memory limiters the gateway falls back to, with a
// virtual clock. `boxoffice lab` runs it from the command line; the playground shows it.
package lab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/clock"
)

// Request is one line of a trace.
type Request struct {
	// At is the time since the trace started.
	At time.Duration
	// Key is who sends it; requests with different keys have separate budgets.
	Key string
	// Cost is what the request spends; 1 when the trace gives none.
	Cost int
}

// ParseTrace reads a trace: one request per line, "seconds[,key[,cost]]", seconds since the
// trace start (fractions allowed, never going back), key and cost optional. Blank lines and
// everything after a '#' are ignored.
func ParseTrace(r io.Reader) ([]Request, error) {
	var trace []Request
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		q, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("trace line %d: %w", n, err)
		}
		if len(trace) > 0 && q.At < trace[len(trace)-1].At {
			return nil, fmt.Errorf("trace line %d: time %v is before the previous request's", n, q.At)
		}
		trace = append(trace, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	return trace, nil
}

func parseLine(line string) (Request, error) {
	fields := strings.Split(line, ",")
	if len(fields) > 3 {
		return Request{}, fmt.Errorf("%d fields, want seconds[,key[,cost]]", len(fields))
	}
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	// ParseDuration reads decimal fractions exactly, where a float would round.
	at, err := time.ParseDuration(fields[0] + "s")
	if err != nil || at < 0 {
		return Request{}, fmt.Errorf("time %q: want seconds since the trace start, e.g. 1.25", fields[0])
	}
	q := Request{At: at.Truncate(time.Microsecond), Cost: 1}
	if len(fields) > 1 {
		q.Key = fields[1]
	}
	if len(fields) > 2 && fields[2] != "" {
		if q.Cost, err = strconv.Atoi(fields[2]); err != nil || q.Cost < 1 {
			return Request{}, fmt.Errorf("cost %q: want a whole number of at least 1", fields[2])
		}
	}
	return q, nil
}

// Config is the limit every algorithm is given.
type Config struct {
	Limit  int
	Window time.Duration
	// Burst is the capacity of token_bucket and gcra; 0 means Limit. Their rate is always
	// Limit per Window, and they start full.
	Burst int
	// Algorithms to compare, in order; nil means all of them (token_bucket and gcra under
	// a Parent).
	Algorithms []ratelimit.Algorithm
	// MaxDelay, above 0, adds the line QueueLabel after them: a gcra that queues (Burst its
	// size) with this max delay, whose requests pass at once, wait their turn or are refused.
	MaxDelay time.Duration
	// Parent, above 0, puts every key of the trace under one parent of Parent per Window, as
	// tenants under a plan (docs/lessons/algorithms.md, "Hierarchies that borrow"): Limit is
	// each key's share, Ceiling (0 = Limit, no borrowing) the most it reaches borrowing what
	// the others leave, and the parent keeps Reserve (0 = a tenth of Parent, at least 1)
	// for requests within a share.
	Parent, Ceiling, Reserve int
	// Sync, above 0, adds after the others a line per fixed_window and sliding_counter among
	// Algorithms (ApproxLabel): the algorithm in approximate mode (ratelimit.Approximate) on
	// Replicas replicas that sync their counts every Sync, from 10ms to less than Window
	// (ratelimit.CheckSync). Replicas is 0 for DefaultReplicas, else at least 1.
	Sync     time.Duration
	Replicas int
}

// Result is one algorithm's replay of a trace.
type Result struct {
	Algorithm ratelimit.Algorithm `json:"algorithm"`
	Allowed   int                 `json:"allowed"`
	Denied    int                 `json:"denied"`
	// Decisions holds each request's allowed flag, in trace order.
	Decisions []bool `json:"decisions"`
	// Remaining holds the budget left after each request, in trace order, as the limiter's
	// Decision.Remaining reports it: for sliding_counter, Limit minus Remaining is the
	// estimate of the sliding window, this request included.
	Remaining []int `json:"remaining"`
	// Note says how this algorithm read the trace differently from the others, if it did.
	Note string `json:"note,omitempty"`
	// Label names a line that is not an algorithm alone (QueueLabel); "" means Algorithm.
	Label string `json:"label,omitempty"`
	// Delays holds, for the queue's line, the seconds each request waited its turn, in trace
	// order: 0 for one that passed at once or was refused.
	Delays []float64 `json:"delays,omitempty"`
	// Under a Parent: Borrowed holds, per request, whether it passed on budget its key
	// borrowed; Parent the parent's budget left after it; Borrows counts the borrowed.
	Borrowed []bool `json:"borrowed,omitempty"`
	Parent   []int  `json:"parent,omitempty"`
	Borrows  int    `json:"borrows,omitempty"`
	// Replicas is, for an approximate line, the replicas it was decided on; 0 for the others.
	// Over is then the most units one key's window (aligned on the trace start) admitted
	// above Limit.
	Replicas int `json:"replicas,omitempty"`
	Over     int `json:"over,omitempty"`
}

// Name is the line's name: its label, else its algorithm.
func (r Result) Name() string {
	if r.Label != "" {
		return r.Label
	}
	return string(r.Algorithm)
}

// NoteConcurrencyCost is the Note of a concurrency replay whose trace has a request costing
// more than 1: a concurrency limit counts requests in flight, so each allowed request takes
// one slot whatever its cost (ratelimit.Rule.Cost).
const NoteConcurrencyCost = "the cost column is ignored: each request takes one slot"

// Replay runs trace through each algorithm on its own in-memory limiter and virtual clock,
// windows aligned on the trace start. Under concurrency each allowed request holds one slot
// for a whole Window, whatever its cost. The answers are the limiter's, arithmetic included
// (whole microseconds, sliding_counter's rounding down: docs/lessons/algorithms.md,
// "Sliding-window counter"). With a Sync, the window algorithms are replayed again on
// replicas counting approximately (replayApprox); the same trace and Config give the same
// results every time.
func Replay(trace []Request, cfg Config) ([]Result, error) {
	if cfg.Parent > 0 && cfg.MaxDelay > 0 {
		return nil, fmt.Errorf("a queue's line and a parent do not combine: a level of a hierarchy refuses, it does not queue")
	}
	if err := cfg.checkApprox(); err != nil {
		return nil, err
	}
	if cfg.Sync > 0 && cfg.Replicas == 0 {
		cfg.Replicas = DefaultReplicas
	}
	algs := cfg.Algorithms
	switch {
	case len(algs) > 0:
	case cfg.Parent > 0:
		algs = []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.GCRA}
	default:
		algs = ratelimit.Algorithms
	}
	results := make([]Result, 0, len(algs)+3)
	for _, a := range algs {
		rule := ratelimit.Rule{ID: string(a), Algorithm: a, Limit: cfg.Limit, Window: cfg.Window, Burst: cfg.Burst}
		var parent *ratelimit.Rule
		if cfg.Parent > 0 {
			reserve := cfg.Reserve
			if reserve == 0 {
				reserve = max(1, cfg.Parent/10)
			}
			parent = &ratelimit.Rule{ID: "parent", Algorithm: a, Limit: cfg.Parent, Window: cfg.Window, Level: &ratelimit.Level{Reserve: reserve}}
			rule.Level = &ratelimit.Level{Parent: parent.ID, Ceiling: cfg.Ceiling}
		}
		res, err := replay(trace, rule, parent)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	if cfg.MaxDelay > 0 {
		res, err := replayQueue(trace, cfg)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	for _, a := range algs {
		if cfg.Sync == 0 || !approximable(a) {
			continue
		}
		res, err := replayApprox(trace, cfg, a, true)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	return results, nil
}

// replay runs trace through rule on an in-memory limiter of its own and a virtual clock;
// with a parent, every request asks it too, as a level of a hierarchy.
func replay(trace []Request, rule ratelimit.Rule, parent *ratelimit.Rule) (Result, error) {
	if err := rule.Validate(); err != nil {
		return Result{}, err
	}
	a := rule.Algorithm
	var now time.Time
	mem := ratelimit.NewMemory(clock.Func(func() time.Time { return now }))
	res := Result{Algorithm: a, Decisions: make([]bool, len(trace)), Remaining: make([]int, len(trace))}
	if rule.MaxDelay > 0 {
		res.Delays = make([]float64, len(trace))
	}
	if parent != nil {
		res.Borrowed, res.Parent = make([]bool, len(trace)), make([]int, len(trace))
	}
	for i, q := range trace {
		if a == ratelimit.Concurrency && q.Cost > 1 {
			res.Note = NoteConcurrencyCost
		}
		now = time.UnixMicro(0).Add(q.At)
		reqs := []ratelimit.Request{{Rule: rule, Key: q.Key, Cost: q.Cost}}
		if parent != nil {
			reqs = append(reqs, ratelimit.Request{Rule: *parent, Key: "parent"})
		}
		d, err := mem.Allow(context.Background(), reqs)
		if err != nil {
			return Result{}, fmt.Errorf("%s: request %d: %w", rule.ID, i+1, err)
		}
		res.Decisions[i], res.Remaining[i] = d.Allowed, d.Rules[0].Remaining
		if parent != nil {
			res.Borrowed[i], res.Parent[i] = d.Allowed && d.Rules[0].Borrowing, d.Rules[1].Remaining
			if res.Borrowed[i] {
				res.Borrows++
			}
		}
		if res.Delays != nil {
			res.Delays[i] = d.Delay.Seconds()
		}
		if d.Allowed {
			res.Allowed++
		} else {
			res.Denied++
		}
	}
	return res, nil
}
