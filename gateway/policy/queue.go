package policy

import (
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

// MaxQueueWait bounds the longest wait a queue may give: a held request must still be
// answered within the clients' timeouts, the edge's (35 s) and the gateway's own write
// timeout (60 s), with room left for the service's answer.
const MaxQueueWait = 30 * time.Second

// Queue makes a gcra limit shape its traffic rather than refuse the excess: the leaky bucket
// as a queue (docs/lessons/algorithms.md, "Throttling by delay"). A request over the rate
// waits its turn and leaves at the rate; only a request that finds the queue full, or whose
// turn is further than MaxDelay, is refused with 429. In YAML:
//
//	queue: {size: 20, max_delay: 2s}   # nginx: limit_req burst=19
//	queue: {size: 401, nodelay: true}  # nginx: limit_req burst=400 nodelay
type Queue struct {
	// Size is how many requests the bucket holds, the one leaving now included: 20 at
	// 10/s let the first pass at once and 19 wait up to 1.9 s. nginx's burst counts only
	// those that wait: burst=b is a size of b + 1.
	Size int `yaml:"size" json:"size"`
	// MaxDelay bounds a request's wait: a turn further off is refused. 0 means no bound but
	// the size's, (Size − 1) intervals.
	MaxDelay Duration `yaml:"max_delay" json:"max_delay,omitempty"`
	// NoDelay lets every request the queue admits through at once, counted all the same:
	// the places free at the rate. It is then a gcra meter of burst Size.
	NoDelay bool `yaml:"nodelay" json:"nodelay,omitempty"`
}

// validateQueue checks a limit's queue against its algorithm, burst and rate (limit per
// window), as Queue describes it.
func validateQueue(field func(string) string, l Limit, alg ratelimit.Algorithm, limit int, window time.Duration) error {
	q := l.Queue
	switch {
	case q == nil:
		return nil
	case alg != ratelimit.GCRA:
		return fieldErr(field("queue"), "a queue is a gcra that delays instead of refusing: want algorithm gcra, not %s", alg)
	case l.Burst != 0:
		return fieldErr(field("burst"), "%d: with a queue, queue.size is the bucket: leave burst out", l.Burst)
	case q.Size < 1:
		return fieldErr(field("queue.size"), "%d: want 1 or more, the requests the queue holds, the one leaving now included", q.Size)
	case q.MaxDelay < 0:
		return fieldErr(field("queue.max_delay"), "%v: want 0 (the size bounds the wait) or more", q.MaxDelay)
	case q.NoDelay && q.MaxDelay != 0:
		return fieldErr(field("queue.max_delay"), "with nodelay nothing waits: leave max_delay out")
	case q.NoDelay:
		return nil
	}
	// The last place of a full queue waits size − 1 intervals, unless max_delay cuts it.
	interval := max(1, window/time.Duration(limit))
	switch {
	case q.MaxDelay > Duration(MaxQueueWait):
		return fieldErr(field("queue.max_delay"), "%v: want at most %v, so that a held request is still answered within its clients' timeouts", q.MaxDelay.D(), MaxQueueWait)
	case q.MaxDelay == 0 && time.Duration(q.Size-1) > MaxQueueWait/interval:
		return fieldErr(field("queue.size"), "%d at one every %v: the last would wait more than %v; want a smaller queue, or a max_delay", q.Size, interval, MaxQueueWait)
	}
	return nil
}

// queueRule makes r, l's rule, the queue l names: the bucket is the queue and, unless
// nodelay, a request waits its turn for at most the max delay, or at most as long as the
// size allows.
func queueRule(r *ratelimit.Rule, q *Queue) {
	if q == nil {
		return
	}
	r.Burst = q.Size
	switch {
	case q.NoDelay:
	case q.MaxDelay > 0:
		r.MaxDelay = q.MaxDelay.D()
	default:
		r.MaxDelay = ratelimit.MaxWindow
	}
}
