// Package ratelimit decides whether a request may pass its rate limits and quotas.
//
// Every algorithm exists twice with the same semantics, held to the same decisions by tests:
// a Redis Lua script (Redis), shared by every gateway replica, and an in-memory Memory for
// local limits, the fallback while Redis is down, and the algorithm lab. All the rules of a
// request are decided in one call, two-pass: budgets are spent only when every enforced rule
// allows. Failsafe keeps deciding when Redis is slow or down; Leases and Sharded relieve hot
// keys. Time is whole microseconds in both, so the script and the Go code agree exactly.
// See docs/lessons/distributed.md.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"math/bits"
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
	// Partial enforces the rule for Rule.EnforcePercent of its keys, picked by Enforces, and
	// decides the others as Shadow: a rule's rollout between shadow and enforced for all.
	Partial Mode = "partial"
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
	// Mode is Enforce (the zero value), Shadow or Partial.
	Mode Mode
	// EnforcePercent is the share of keys, 0 to 100, a Partial rule enforces. Other modes
	// ignore it.
	EnforcePercent int
	// OnStoreFailure is FailOpen (the zero value) or FailClosed.
	OnStoreFailure FailureMode
	// Lease, when above 0, lets Leases take this many tokens at once from the store and spend
	// them locally. Only Leases reads it.
	Lease int
	// LeaseWhenHot leases (Lease) only the keys HotKeys finds hot; a cold key asks the store
	// every time. Only HotKeys reads it.
	LeaseWhenHot bool
	// Sync, when above 0, lets Approximate decide the rule in each replica's memory and sync
	// its counts with the store this often (fixed_window and sliding_window only). Only
	// Approximate reads it.
	Sync time.Duration
	// Shards, when above 1, lets Sharded split the rule's budget over this many sub-keys.
	// Only Sharded reads it.
	Shards int
	// MaxDelay, above 0, makes a GCRA rule shape rather than meter: Burst is then a queue's
	// size, the request leaving now included, and a request over the rate is allowed after
	// waiting its turn (Decision.Delay), at most MaxDelay. 0 denies it at once. See
	// docs/lessons/algorithms.md, "Throttling by delay".
	MaxDelay time.Duration
	// Level places the rule in a hierarchy (hierarchy.go); nil, for a flat rule, keeps the
	// requests of flat rules as small as they were.
	Level *Level
	// Global, when set, makes the rule one limit across regions; only Regional reads it.
	Global *Global
}

// The bounds Validate keeps a rule within, so that every number the Lua scripts compute is
// an exact integer: Lua numbers are doubles, exact below 2^53, and the scripts add spans of
// time to now, about 2^50.7 µs since 1970 in 2026. The in-memory twin computes in int64 and
// is exact within them too.
const (
	// maxExact is 2^53: Lua numbers are doubles, exact for integers below it.
	maxExact = 1 << 53
	// MaxCount bounds a rule's limit, burst, cost and lease (about 10^15): a sum of a few
	// stays exact.
	MaxCount = 1 << 50
	// MaxWindow bounds a window (about 71 years): the counters reach now + 2 × window.
	MaxWindow = (1 << 51) * time.Microsecond
	// MaxLogLimit bounds a sliding_log's limit: the log keeps an entry per unit spent in its
	// window, so its limit is the memory a key may take in Redis (about 100 bytes an entry)
	// and the entries one decision may add. Larger limits are for sliding_window.
	MaxLogLimit = 100_000
	// maxSpan bounds how far past now, in µs, a bucket's state may reach (about 142 years):
	// burst plus cost intervals. now + maxSpan stays below 2^53 until the year 2112.
	maxSpan = 1 << 52
)

// RuleError is a rule Validate refuses, naming the field at fault as a policy spells it:
// limit, window, burst, cost, lease, lease_when_hot, shards, sync, max_delay, algorithm, mode,
// enforce_percent, on_store_failure, id, parent, ceiling, reserve, global, global.mode or
// global.shares.
type RuleError struct {
	Rule, Field, Problem string
}

func (e *RuleError) Error() string { return "rule " + e.Rule + ": " + e.Field + ": " + e.Problem }

func ruleErr(r Rule, field, format string, args ...any) error {
	return &RuleError{Rule: r.ID, Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Validate reports a rule that cannot be decided, or not exactly, as a *RuleError: a zero
// limit, a window shorter than one microsecond per unit, or numbers beyond the bounds above
// (MaxCount, MaxWindow, and for the buckets and the sliding counter the products their
// scripts compute). A sharded rule's every shard must validate too.
func (r Rule) Validate() error {
	if r.ID == "" {
		return &RuleError{Field: "id", Problem: "rule has no id"}
	}
	if _, err := ParseAlgorithm(string(r.Algorithm)); err != nil {
		return ruleErr(r, "algorithm", "%v", err)
	}
	for _, c := range []struct {
		field string
		n     int
	}{{"limit", r.Limit}, {"burst", r.Burst}, {"cost", r.Cost}, {"lease", r.Lease}, {"shards", r.Shards},
		{"ceiling", r.ceiling()}, {"reserve", r.reserve()}} {
		switch {
		case c.n < 0:
			return ruleErr(r, c.field, "%d: want 0 or more", c.n)
		case c.n > MaxCount:
			return ruleErr(r, c.field, "%d: want at most %d, so that the limiter counts it exactly", c.n, MaxCount)
		}
	}
	if r.Limit < 1 {
		return ruleErr(r, "limit", "%d: want at least 1", r.Limit)
	}
	w := r.Window.Microseconds()
	switch {
	case w < 1:
		return ruleErr(r, "window", "%v: want at least 1µs", r.Window)
	case r.Window > MaxWindow:
		return ruleErr(r, "window", "%v: want at most %v", r.Window, MaxWindow)
	}
	switch r.Mode {
	case "", Enforce, Shadow, Partial:
	default:
		return ruleErr(r, "mode", "unknown mode %q", r.Mode)
	}
	if r.EnforcePercent < 0 || r.EnforcePercent > 100 {
		return ruleErr(r, "enforce_percent", "%d: want 0 to 100", r.EnforcePercent)
	}
	switch r.OnStoreFailure {
	case "", FailOpen, FailClosed:
	default:
		return ruleErr(r, "on_store_failure", "unknown on_store_failure %q", r.OnStoreFailure)
	}
	if r.LeaseWhenHot && r.Lease == 0 {
		return ruleErr(r, "lease_when_hot", "a rule leases only with a lease: set lease too")
	}
	if r.Sync < 0 || r.Sync > 0 && (r.Algorithm != FixedWindow && r.Algorithm != SlidingCounter || r.Lease > 0 || r.Shards > 1) {
		return ruleErr(r, "sync", "%v: want 0, or a positive interval on a fixed_window or sliding_window without lease or shards", r.Sync)
	}
	switch r.Algorithm {
	case TokenBucket, GCRA:
		// The buckets refill one token per interval; a zero interval would be an infinite rate.
		if w/int64(r.Limit) < 1 {
			return ruleErr(r, "limit", "%d per %v is more than one per microsecond", r.Limit, r.Window)
		}
		if err := r.checkSpan(); err != nil {
			return err
		}
	case SlidingLog:
		if r.Limit > MaxLogLimit {
			return ruleErr(r, "limit", "%d: a sliding_log keeps an entry per unit in its window; want at most %d, or use sliding_window", r.Limit, MaxLogLimit)
		}
	case SlidingCounter:
		// The estimate and its wait compute up to (limit + 1) × window + limit.
		if hi, lo := bits.Mul64(uint64(r.Limit)+1, uint64(w)); hi != 0 || lo >= maxExact-uint64(r.Limit) {
			return ruleErr(r, "limit", "%d per %v: limit × window too large for sliding_counter; use fixed_window", r.Limit, r.Window)
		}
	}
	if err := r.checkQueue(); err != nil {
		return err
	}
	if r.Shards > 1 { // each shard is a rule of its own, with a share of the limit and burst
		if err := shard(Request{Rule: r}, r.Shards-1).Rule.Validate(); err != nil {
			return ruleErr(r, "shards", "%d: a shard does not validate: %v", r.Shards, err)
		}
	}
	if err := r.validateGlobal(); err != nil {
		return err
	}
	return r.validateLevel()
}

// checkSpan bounds how far ahead of now a bucket's state reaches: its burst, plus the most
// one request asks (its cost, or a whole lease), times the refill interval. The field named
// is the largest of the three.
func (r Rule) checkSpan() error {
	p := r.params()
	ask := max(1, int64(r.Cost), int64(r.Lease))
	if hi, lo := bits.Mul64(uint64(p.burst+ask), uint64(p.interval)); hi == 0 && lo <= maxSpan {
		return nil
	}
	field := "burst"
	switch {
	case ask > p.burst && int64(r.Lease) == ask:
		field = "lease"
	case ask > p.burst:
		field = "cost"
	case r.Burst == 0:
		field = "limit"
	}
	return ruleErr(r, field, "a burst of %d and a request of %d, at one token per %v, reach more than %v ahead",
		p.burst, ask, time.Duration(p.interval)*time.Microsecond, time.Duration(maxSpan)*time.Microsecond)
}

// params are a rule's numbers in the units the algorithms compute with.
type params struct {
	limit, window, burst int64 // window in µs
	interval             int64 // µs per token for the buckets
	maxDelay             int64 // µs; above 0, GCRA queues (Rule.MaxDelay)
}

func (r Rule) params() params {
	p := params{limit: int64(r.Limit), window: r.Window.Microseconds(), burst: int64(r.Burst), maxDelay: r.MaxDelay.Microseconds()}
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
	// PathLocalDeny: denied without a store call, because the store had denied the key until
	// later (Failsafe). The request's other rules are reported but were not asked.
	PathLocalDeny Path = "local_deny"
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
	// Delay is how long an allowed request waits before it goes on: its turn in a shaping
	// rule's queue (Rule.MaxDelay), reserved already. 0 when it passes at once or is denied.
	Delay time.Duration
	// Rule is the ID of the rule that decided.
	Rule string
	// Mode is how the rule applies to the request's key: Enforce, or Shadow for a shadow
	// rule and for a key outside a Partial rule's enforced share, which Unenforced marks.
	Mode       Mode
	Unenforced bool
	Path       Path
	// Lease is set when an allowed Concurrency rule holds a slot; release it when done.
	Lease *Lease
	// Borrowing marks a level of a hierarchy over its own share: it passed on its parent's
	// unused budget (Allowed) or reached its ceiling (denied). Limit then is the ceiling.
	Borrowing bool
	// skipped marks a rule that was not decided: another rule denied the request first.
	skipped bool
}

// Result holds the effective decision for a request and each rule's own decision, in request
// order. The effective decision is the most restrictive enforced one: when denied, the
// denial with the longest RetryAfter; when allowed, the rule closest to exhaustion, with the
// longest Delay of the enforced rules (the request waits for its last turn).
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

// validated is a Limiter whose layers pass requests on already validated: the chain checks
// a request once, at its outermost layer, and each layer calls the next through allowValid.
type validated interface {
	allowValid(ctx context.Context, reqs []Request) (Result, error)
}

// allowValid asks l about reqs, which the caller has validated.
func allowValid(ctx context.Context, l Limiter, reqs []Request) (Result, error) {
	if v, ok := l.(validated); ok {
		return v.allowValid(ctx, reqs)
	}
	return l.Allow(ctx, reqs)
}

// verdict is one rule's answer in microseconds, as both implementations compute it. retry
// is the time until the request conforms: for a denied one, its RetryAfter; for an allowed
// one, the wait its slot in a queue reserves (Decision.Delay), 0 for every other algorithm.
type verdict struct {
	allowed                 bool
	remaining, reset, retry int64
}

func (v verdict) decision(q Request, path Path) Decision {
	if q.Charge { // spent whatever the budget said
		v.allowed, v.retry = true, 0
	}
	mode, unenforced := q.mode()
	d := Decision{
		Allowed:    v.allowed,
		Remaining:  int(max(0, v.remaining)),
		Reset:      time.Duration(v.reset) * time.Microsecond,
		RetryAfter: time.Duration(v.retry) * time.Microsecond,
		Limit:      q.Rule.Limit,
		Window:     q.Rule.Window,
		Rule:       q.Rule.ID,
		Mode:       mode,
		Unenforced: unenforced,
		Path:       path,
	}
	if v.allowed {
		d.Delay, d.RetryAfter = d.RetryAfter, 0
	}
	return d
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
		if q.Cost < 0 || q.Cost > MaxCount {
			return fmt.Errorf("rule %s: cost %d: want 0 to %d", q.Rule.ID, q.Cost, MaxCount)
		}
		if q.Charge && q.Rule.Algorithm == Concurrency {
			return fmt.Errorf("rule %s: a concurrency slot cannot be charged after the fact", q.Rule.ID)
		}
	}
	return validateChains(reqs)
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
		res.Delay = 0
		return res
	}
	res.RetryAfter = 0
	res.Delay = 0
	for _, d := range ds {
		if d.Mode == Shadow && !d.Allowed {
			res.Path = PathShadow
		}
		if d.Mode != Shadow { // a request waits for the longest of its queues
			res.Delay = max(res.Delay, d.Delay)
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
