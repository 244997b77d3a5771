// Package ratelimit decides whether a request may pass its rate limits and quotas.
//
// Every algorithm exists twice with the same semantics: a Redis Lua script (Redis), shared by
// every gateway replica, and an in-memory implementation (Memory) for local limits, the
// fallback used while Redis is down, and the algorithm lab. Tests hold the two to the same
// decisions on the same traces.
//
// A request is checked against several rules at once (per user, per IP, per route, a monthly
// quota…). All of them are decided in one call and, against Redis, in one round trip. The
// decision is two-pass: every rule is checked first and budgets are spent only when every
// enforced rule allows, so a request denied by one rule does not spend the others' budgets.
//
// Failsafe wraps the Redis limiter with a per-call timeout, a circuit breaker and a local
// fallback at limit/N (N live gateway replicas). Leases and Sharded relieve hot keys.
//
// Time is counted in whole microseconds by both implementations, so integer arithmetic gives
// the script and the Go code the very same answers.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Algorithm names a limiting algorithm as it appears in policy files.
type Algorithm string

// The algorithms, each with a Lua and an in-memory implementation.
const (
	// FixedWindow counts requests per window aligned on the clock. Cheap, but up to twice the
	// limit can pass around a window boundary.
	FixedWindow Algorithm = "fixed_window"
	// SlidingLog keeps one timestamp per unit spent over the last window: exact, but memory
	// grows with the limit.
	SlidingLog Algorithm = "sliding_log"
	// SlidingCounter weights the previous window's count by how much of it still overlaps the
	// sliding window: two counters, a small bounded error.
	SlidingCounter Algorithm = "sliding_counter"
	// TokenBucket holds Burst tokens, refilled one every Window/Limit; refill is computed
	// lazily on access.
	TokenBucket Algorithm = "token_bucket"
	// GCRA (generic cell rate algorithm, a leaky bucket as a meter) stores one timestamp, the
	// theoretical arrival time, and allows bursts of Burst.
	GCRA Algorithm = "gcra"
	// Concurrency counts requests in flight. Each allowed request holds a Lease until it is
	// released or, if its holder crashed, until Window has passed.
	Concurrency Algorithm = "concurrency"
)

// Algorithms lists every algorithm in a stable order.
var Algorithms = []Algorithm{FixedWindow, SlidingLog, SlidingCounter, TokenBucket, GCRA, Concurrency}

// ParseAlgorithm reads an algorithm name. "sliding_window" is accepted for SlidingCounter.
func ParseAlgorithm(s string) (Algorithm, error) {
	if s == "sliding_window" {
		return SlidingCounter, nil
	}
	for _, a := range Algorithms {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown algorithm %q", s)
}

// Mode says whether a rule's denials are enforced. The zero value is Enforce.
type Mode string

const (
	// Enforce denies requests over the limit.
	Enforce Mode = "enforce"
	// Shadow computes the decision and reports it but never denies: a new rule can be
	// watched on real traffic before it bites.
	Shadow Mode = "shadow"
)

// FailureMode says what a rule does while the shared store is unreachable. The zero value is
// FailOpen.
type FailureMode string

const (
	// FailOpen decides on a local limiter at Limit/N: a short period of approximate limits
	// is rarely worse than an outage.
	FailOpen FailureMode = "open"
	// FailClosed denies: for security-sensitive limits (login, password reset, OTP) a burst
	// of guesses is worse than a short refusal.
	FailClosed FailureMode = "closed"
)

// Rule is one limit: how much, per what window, by which algorithm, and what to do when it is
// exceeded or cannot be checked. The key it applies to is chosen per request by the caller.
type Rule struct {
	// ID names the rule in decisions, metrics, headers and storage keys.
	ID        string
	Algorithm Algorithm
	// Limit is the budget per Window in cost units; for Concurrency, the requests in flight.
	Limit int
	// Window is the period of Limit; for Concurrency, how long a lease lives unreleased.
	Window time.Duration
	// Burst is the bucket capacity of TokenBucket and GCRA; 0 means Limit. Others ignore it.
	Burst int
	// Cost is what a request spends when it names none; 0 means 1. Concurrency always takes
	// one slot per request.
	Cost int
	// Mode is Enforce (the zero value) or Shadow.
	Mode Mode
	// OnStoreFailure is FailOpen (the zero value) or FailClosed.
	OnStoreFailure FailureMode
	// Lease, when above 0, lets Leases take this many tokens at once from the store and spend
	// them locally. Only Leases reads it.
	Lease int
	// Shards, when above 1, lets Sharded split the rule's budget over this many sub-keys.
	// Only Sharded reads it.
	Shards int
}

// maxExact is 2^53: Lua numbers are doubles, exact for integers below it.
const maxExact = 1 << 53

// Validate reports a rule that cannot be decided, such as a zero limit or a window shorter
// than one microsecond per unit.
func (r Rule) Validate() error {
	if r.ID == "" {
		return errors.New("rule has no id")
	}
	if _, err := ParseAlgorithm(string(r.Algorithm)); err != nil {
		return fmt.Errorf("rule %s: %w", r.ID, err)
	}
	if r.Limit < 1 {
		return fmt.Errorf("rule %s: limit %d, want at least 1", r.ID, r.Limit)
	}
	w := r.Window.Microseconds()
	if w < 1 {
		return fmt.Errorf("rule %s: window %v, want at least 1µs", r.ID, r.Window)
	}
	if r.Burst < 0 || r.Cost < 0 || r.Lease < 0 || r.Shards < 0 {
		return fmt.Errorf("rule %s: negative burst, cost, lease or shards", r.ID)
	}
	switch r.Mode {
	case "", Enforce, Shadow:
	default:
		return fmt.Errorf("rule %s: unknown mode %q", r.ID, r.Mode)
	}
	switch r.OnStoreFailure {
	case "", FailOpen, FailClosed:
	default:
		return fmt.Errorf("rule %s: unknown on_store_failure %q", r.ID, r.OnStoreFailure)
	}
	// The buckets refill one token per interval; a zero interval would be an infinite rate.
	if (r.Algorithm == TokenBucket || r.Algorithm == GCRA) && w/int64(r.Limit) < 1 {
		return fmt.Errorf("rule %s: %d per %v is more than one per microsecond", r.ID, r.Limit, r.Window)
	}
	// The sliding counter compares limit × window; both implementations keep it exact.
	if r.Algorithm == SlidingCounter && float64(r.Limit+1)*float64(w) >= maxExact {
		return fmt.Errorf("rule %s: limit × window too large for sliding_counter; use fixed_window", r.ID)
	}
	return nil
}

// params are a rule's numbers in the units the algorithms compute with.
type params struct {
	limit, window, burst int64 // window in µs
	interval             int64 // µs per token for the buckets
}

func (r Rule) params() params {
	p := params{limit: int64(r.Limit), window: r.Window.Microseconds(), burst: int64(r.Burst)}
	if p.burst == 0 {
		p.burst = p.limit
	}
	p.interval = max(1, p.window/p.limit)
	return p
}

// capacity is the most a fresh key can spend at once under r.
func (r Rule) capacity() int {
	if (r.Algorithm == TokenBucket || r.Algorithm == GCRA) && r.Burst > 0 {
		return r.Burst
	}
	return r.Limit
}

func (r Rule) enforced() bool { return r.Mode != Shadow }

// Request asks one rule about one key.
type Request struct {
	Rule Rule
	// Key identifies who is limited, e.g. "user:42" or "ip:10.0.0.7". In Redis it is a hash
	// tag: all keys of one client land on one Cluster slot. A key that holds a {tag} already
	// keeps it, so "{user:42}:route:holds" stays on user 42's slot.
	Key string
	// Cost is what this request spends; 0 means Rule.Cost.
	Cost int
	// Charge spends Cost without asking, for a cost known only once the response is out,
	// such as the tokens an answer used. It always succeeds and may overdraw the budget:
	// later requests are denied until the debt is paid back. Not for Concurrency rules.
	Charge bool
}

func (q Request) cost() int64 {
	switch {
	case q.Rule.Algorithm == Concurrency:
		return 1
	case q.Cost > 0:
		return int64(q.Cost)
	case q.Rule.Cost > 0:
		return int64(q.Rule.Cost)
	}
	return 1
}

// Path records how a decision was reached.
type Path string

const (
	// PathStore: decided by the shared store.
	PathStore Path = "store"
	// PathMemory: decided by an in-memory limiter that is the limit itself (not a fallback).
	PathMemory Path = "memory"
	// PathFallback: the store was unavailable; decided locally at Limit/N.
	PathFallback Path = "fallback"
	// PathFailClosed: the store was unavailable and the rule denies without it.
	PathFailClosed Path = "fail_closed"
	// PathLease: decided locally on tokens leased earlier from the store.
	PathLease Path = "lease"
	// PathShadow: the request passed although a shadow rule would have denied it.
	PathShadow Path = "shadow"
)

// Decision is one rule's answer, or the effective answer for a whole request.
type Decision struct {
	Allowed bool
	// Remaining is the budget left after this request, 0 when overdrawn by a charge.
	Remaining int
	// Reset is the time until the full budget is back if nothing else is spent.
	Reset time.Duration
	// RetryAfter is the time until this request would pass; 0 when allowed.
	RetryAfter time.Duration
	Limit      int
	Window     time.Duration
	// Rule is the ID of the rule that decided.
	Rule string
	Mode Mode
	Path Path
	// Lease is set when an allowed Concurrency rule holds a slot; release it when done.
	Lease *Lease
}

// Result holds the effective decision for a request and each rule's own decision, in request
// order. The effective decision is the most restrictive enforced one: when denied, the
// denial with the longest RetryAfter; when allowed, the rule closest to exhaustion.
type Result struct {
	Decision
	Rules []Decision
}

// Leases lists the concurrency slots a result holds.
func (r Result) Leases() []Lease {
	var ls []Lease
	for _, d := range r.Rules {
		if d.Lease != nil {
			ls = append(ls, *d.Lease)
		}
	}
	return ls
}

// Lease is a slot held under a Concurrency rule.
type Lease struct {
	Rule string
	Key  string
	ID   string
	// local marks a lease taken from an in-memory limiter, such as Failsafe's fallback.
	local bool
}

// Limiter decides requests against their rules.
type Limiter interface {
	// Allow decides every request of one incoming call together and spends budgets only if
	// the call is allowed.
	Allow(ctx context.Context, reqs []Request) (Result, error)
	// Release gives back concurrency slots. Releasing an unknown or expired lease is a no-op.
	Release(ctx context.Context, leases ...Lease) error
}

// verdict is one rule's answer in microseconds, as both implementations compute it.
type verdict struct {
	allowed                 bool
	remaining, reset, retry int64
}

func (v verdict) decision(q Request, path Path) Decision {
	if q.Charge { // spent whatever the budget said
		v.allowed, v.retry = true, 0
	}
	return Decision{
		Allowed:    v.allowed,
		Remaining:  int(max(0, v.remaining)),
		Reset:      time.Duration(v.reset) * time.Microsecond,
		RetryAfter: time.Duration(v.retry) * time.Microsecond,
		Limit:      q.Rule.Limit,
		Window:     q.Rule.Window,
		Rule:       q.Rule.ID,
		Mode:       q.Rule.mode(),
		Path:       path,
	}
}

func (r Rule) mode() Mode {
	if r.Mode == "" {
		return Enforce
	}
	return r.Mode
}

// validate checks every request before anything is spent. A request names each rule and key
// once: two checks of one state in one call would each see it unspent.
func validate(reqs []Request) error {
	for i, q := range reqs {
		for _, earlier := range reqs[:i] { // a handful of rules: a scan beats a map
			if earlier.Rule.ID == q.Rule.ID && earlier.Key == q.Key {
				return fmt.Errorf("rule %s: key %q named twice", q.Rule.ID, q.Key)
			}
		}
		if err := q.Rule.Validate(); err != nil {
			return err
		}
		if q.Cost < 0 {
			return fmt.Errorf("rule %s: negative cost %d", q.Rule.ID, q.Cost)
		}
		if q.Charge && q.Rule.Algorithm == Concurrency {
			return fmt.Errorf("rule %s: a concurrency slot cannot be charged after the fact", q.Rule.ID)
		}
	}
	return nil
}

// admitted reports whether every enforced rule allows.
func admitted(ds []Decision) bool {
	for _, d := range ds {
		if !d.Allowed && d.Mode != Shadow {
			return false
		}
	}
	return true
}

// combine picks the effective decision of a request from its rules' decisions.
func combine(ds []Decision) Result {
	res := Result{Rules: ds}
	if len(ds) == 0 {
		res.Decision = Decision{Allowed: true, Remaining: math.MaxInt, Path: PathMemory}
		return res
	}
	allowed := admitted(ds)
	best := -1
	for i, d := range ds {
		if d.Mode == Shadow {
			continue
		}
		switch {
		case best < 0:
			best = i
		case !allowed && !d.Allowed && (ds[best].Allowed || d.RetryAfter > ds[best].RetryAfter):
			best = i
		case allowed && d.Remaining < ds[best].Remaining:
			best = i
		}
	}
	if best < 0 { // shadow rules only: report the closest to exhaustion
		best = 0
		for i, d := range ds {
			if d.Remaining < ds[best].Remaining {
				best = i
			}
		}
	}
	res.Decision = ds[best]
	res.Decision.Lease = nil
	res.Allowed = allowed
	if !allowed {
		return res
	}
	res.RetryAfter = 0
	for _, d := range ds {
		if d.Mode == Shadow && !d.Allowed {
			res.Path = PathShadow
		}
	}
	return res
}

// storageKey is where a rule's state for a key lives: rl:{tag}:rule.
func storageKey(ruleID, key string) string {
	if _, ok := hashTag(key); ok {
		return "rl:" + key + ":" + ruleID
	}
	return "rl:{" + key + "}:" + ruleID
}

// hashTag returns the part of key that Redis Cluster hashes: the first non-empty {…}.
func hashTag(key string) (string, bool) {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return "", false
				}
				return key[i+1 : j], true
			}
		}
		return "", false
	}
	return "", false
}
