package ratelimit

import "maps"

// This file holds the in-memory algorithms, function for function the same as scripts/*.lua;
// the equivalence tests fail until a change to one is made to both. Each keeps one key's
// state in a small struct whose zero value means "never seen"; a state past its TTL decides
// like the zero value, which lets Redis expire idle keys (docs/lessons/algorithms.md).

// state is one key's state under one algorithm.
type state interface {
	// try decides a request of cost at now (µs). It may tidy the state without changing
	// its meaning (start a new window, drop expired entries). If the request is committed,
	// commit spends it and returns how long the state matters (µs): after that the key may
	// vanish. lease names the slot a Concurrency request takes. A cost of 0 only reads: it
	// reports the budget as it stands, for rules of a request that was denied by another.
	// commit may be called on a denied request: a charge (Request.Charge) overdraws.
	try(p params, now, cost int64, lease string) (v verdict, commit func() (ttl int64))
}

// newState returns the empty state of an algorithm.
func newState(a Algorithm) state {
	switch a {
	case FixedWindow:
		return &fixedWindow{}
	case SlidingLog:
		return &slidingLog{}
	case SlidingCounter:
		return &slidingCounter{}
	case TokenBucket:
		return &tokenBucket{}
	case GCRA:
		return &gcra{}
	default:
		return &concurrency{}
	}
}

// fixedWindow counts units spent in the current window; windows are aligned on multiples of
// the window length since the epoch.
type fixedWindow struct{ start, count int64 }

func (s *fixedWindow) try(p params, now, cost int64, _ string) (verdict, func() int64) {
	start := now - now%p.window
	if s.start != start { // a past window counts nothing
		s.start, s.count = start, 0
	}
	end := start + p.window
	v := verdict{allowed: s.count+cost <= p.limit}
	used := s.count
	if v.allowed {
		used += cost
	}
	v.remaining = p.limit - used
	if used > 0 {
		v.reset = end - now
	}
	if !v.allowed {
		v.retry = impossible(cost > p.limit, p, end-now)
	}
	return v, func() int64 {
		s.count += cost
		return end - now
	}
}

// slidingLog keeps the time of every unit spent in the last window, oldest first. An entry
// at t counts while now < t + window.
type slidingLog struct{ at []int64 }

func (s *slidingLog) try(p params, now, cost int64, _ string) (verdict, func() int64) {
	cut := 0
	for cut < len(s.at) && s.at[cut] <= now-p.window {
		cut++
	}
	s.at = s.at[cut:]
	n := int64(len(s.at))
	v := verdict{allowed: n+cost <= p.limit, remaining: p.limit - n}
	switch {
	case v.allowed && cost > 0:
		v.remaining -= cost
		v.reset = p.window
	case n > 0:
		v.reset = s.at[n-1] + p.window - now
	}
	switch {
	case v.allowed:
	case cost > p.limit:
		v.retry = p.window
	default:
		// The request fits once the oldest n+cost-limit entries have left the window.
		v.retry = s.at[n+cost-p.limit-1] + p.window - now
	}
	return v, func() int64 {
		for range cost {
			s.at = append(s.at, now)
		}
		return p.window
	}
}

// slidingCounter estimates the units spent in the sliding window from two fixed windows:
// estimate = current + previous × (the share of the previous window still inside the
// sliding window), rounded down.
type slidingCounter struct{ start, cur, prev int64 }

func (s *slidingCounter) try(p params, now, cost int64, _ string) (verdict, func() int64) {
	start := now - now%p.window
	if s.start != start {
		if s.start == start-p.window {
			s.prev = s.cur
		} else {
			s.prev = 0
		}
		s.start, s.cur = start, 0
	}
	est := func(cur, prev int64) int64 {
		return cur + prev*(p.window-(now-start))/p.window
	}
	// wait is the time until the estimate falls to target or below if nothing is spent.
	wait := func(cur, prev, target int64) int64 {
		switch {
		case est(cur, prev) <= target:
			return 0
		case cur <= target: // later in this window, as the previous window's weight fades
			return start + p.window - ceilDiv((target-cur+1)*p.window, prev) + 1 - now
		default: // in the next window, where the current count becomes the previous one
			return start + 2*p.window - ceilDiv((target+1)*p.window, cur) + 1 - now
		}
	}
	v := verdict{allowed: est(s.cur, s.prev)+cost <= p.limit}
	cur := s.cur
	if v.allowed {
		cur += cost
	}
	v.remaining = p.limit - est(cur, s.prev)
	v.reset = wait(cur, s.prev, 0)
	switch {
	case v.allowed:
	case cost > p.limit:
		v.retry = p.window
	default:
		v.retry = wait(s.cur, s.prev, p.limit-cost)
	}
	return v, func() int64 {
		s.cur += cost
		return start + 2*p.window - now
	}
}

// tokenBucket holds up to burst tokens and gains one every interval, computed lazily when the
// key is next used; last is when the bucket started counting toward its next token.
type tokenBucket struct {
	tokens, last int64
	seen         bool
}

func (s *tokenBucket) try(p params, now, cost int64, _ string) (verdict, func() int64) {
	if !s.seen { // an unknown key has a full bucket
		s.tokens, s.last, s.seen = p.burst, now, true
	}
	if n := (now - s.last) / p.interval; s.tokens < p.burst && n > 0 {
		s.tokens = min(p.burst, s.tokens+n)
		s.last += n * p.interval
	}
	if s.tokens >= p.burst { // a full bucket does not save up time
		s.tokens, s.last = p.burst, now
	}
	v := verdict{allowed: cost <= s.tokens}
	left := s.tokens
	if v.allowed {
		left -= cost
	}
	v.remaining = left
	if left < p.burst {
		v.reset = s.last + (p.burst-left)*p.interval - now
	}
	if !v.allowed {
		v.retry = impossible(cost > p.burst, p, s.last+(cost-s.tokens)*p.interval-now)
	}
	return v, func() int64 {
		s.tokens -= cost // below zero after a charge: a debt the refill pays back
		return s.last + (p.burst-s.tokens)*p.interval - now
	}
}

// gcra stores the theoretical arrival time (TAT): when the bucket would be empty again if
// requests kept coming at exactly the rate. A request passes if, after adding its cost, the
// TAT is no more than burst intervals ahead of now. With a queue (maxDelay > 0) the TAT is
// where the queue ends: an allowed request waits until it, at most maxDelay, and its retry
// is that wait (verdict).
type gcra struct{ tat int64 }

func (s *gcra) try(p params, now, cost int64, _ string) (verdict, func() int64) {
	tat := max(s.tat, now)
	next := tat + cost*p.interval
	allowAt := next - p.burst*p.interval
	if p.maxDelay > 0 {
		allowAt = max(allowAt, tat-p.maxDelay)
	}
	v := verdict{allowed: now >= allowAt}
	if v.allowed {
		if p.maxDelay > 0 && cost > 0 { // its turn: once the requests ahead have left
			v.retry = tat - now
		}
		tat = next
	}
	v.remaining = (now + p.burst*p.interval - tat) / p.interval
	v.reset = tat - now
	if !v.allowed {
		v.retry = impossible(cost > p.burst, p, allowAt-now)
	}
	return v, func() int64 {
		s.tat = next
		return next - now
	}
}

// concurrency holds the leases in flight and when each expires if never released.
type concurrency struct{ leases map[string]int64 }

func (s *concurrency) try(p params, now, cost int64, lease string) (verdict, func() int64) {
	maps.DeleteFunc(s.leases, func(_ string, exp int64) bool { return exp <= now })
	n := int64(len(s.leases))
	v := verdict{allowed: n+cost <= p.limit, remaining: p.limit - n}
	var first, last int64
	for _, exp := range s.leases {
		if first == 0 || exp < first {
			first = exp
		}
		last = max(last, exp)
	}
	switch {
	case v.allowed && cost > 0:
		v.remaining -= cost
		v.reset = p.window
	case n > 0:
		v.reset = last - now
	}
	if !v.allowed {
		v.retry = first - now // a release may free a slot sooner
	}
	return v, func() int64 {
		if s.leases == nil {
			s.leases = make(map[string]int64)
		}
		s.leases[lease] = now + p.window
		return p.window
	}
}

// release frees a lease early.
func (s *concurrency) release(lease string) { delete(s.leases, lease) }

// impossible is the RetryAfter of a cost above the bucket's capacity: it never passes, and
// the caller is told to come back after a full window rather than soon.
func impossible(never bool, p params, retry int64) int64 {
	if never {
		return p.window
	}
	return retry
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
