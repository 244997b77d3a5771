package upstream

import "sync/atomic"

// shedder is a service's concurrency limit. Over it the gateway answers 503 at once rather
// than queueing: a queue in front of a saturated service only adds latency to every request,
// while a fast 503 + Retry-After keeps the accepted requests' latency flat. It is counted
// apart from 429s: a 429 is one client over its limit, a 503 is everyone's service overloaded.
//
// The zero value has nothing in flight. Safe for concurrent use.
type shedder struct{ n atomic.Int64 }

// acquire takes a slot unless max are taken; max 0 means unlimited (the count is still kept
// for the snapshot). A caller that got true calls release once.
// It compares and swaps rather than adding and undoing, so a request racing a full limit
// never makes another one shed spuriously.
func (s *shedder) acquire(max int) bool {
	for {
		n := s.n.Load()
		if max > 0 && n >= int64(max) {
			return false
		}
		if s.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *shedder) release() { s.n.Add(-1) }

func (s *shedder) inFlight() int64 { return s.n.Load() }
