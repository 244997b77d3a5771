package ratelimit

import "time"

// This file holds what is particular to shaping, a GCRA rule with a queue (Rule.MaxDelay):
// the leaky bucket as a queue of docs/lessons/algorithms.md, "Throttling by delay". The
// decision itself is gcra.try and algorithms.gcra, which give it its wait.

// checkQueue refuses a queue that cannot be held exactly: on another algorithm than GCRA,
// whose theoretical arrival time is the queue's end, or with a lease or shards, which spend
// out of the queue's order (locally, or on one shard of several).
func (r Rule) checkQueue() error {
	switch {
	case r.MaxDelay < 0:
		return ruleErr(r, "max_delay", "%v: want 0 (no queue) or more", r.MaxDelay)
	case r.MaxDelay == 0:
		return nil
	case r.MaxDelay < time.Microsecond:
		return ruleErr(r, "max_delay", "%v: want at least 1µs", r.MaxDelay)
	case r.MaxDelay > MaxWindow:
		return ruleErr(r, "max_delay", "%v: want at most %v", r.MaxDelay, MaxWindow)
	case r.Algorithm != GCRA:
		return ruleErr(r, "max_delay", "a queue is a gcra that delays instead of refusing; %s has no turn to wait for", r.Algorithm)
	case r.Lease > 0:
		return ruleErr(r, "lease", "a leased token is spent locally, out of the queue's order")
	case r.Shards > 1:
		return ruleErr(r, "shards", "each shard would be a queue of its own, served out of order")
	}
	return nil
}
