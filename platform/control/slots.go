package control

import (
	"context"
	"sync"
)

// slots is a counting semaphore whose size can change while requests wait, served in
// arrival order: a saturated backend's queue is first come, first served. A limit of 0
// means unlimited; the count of slots in use is kept either way, since the playground
// plots in-flight work against capacity.
type slots struct {
	mu      sync.Mutex
	limit   int
	inUse   int
	waiters []chan struct{} // FIFO; a channel is closed when its slot is granted
}

// acquire takes a slot, waiting in line while none is free, until ctx ends.
func (s *slots) acquire(ctx context.Context) error {
	s.mu.Lock()
	if len(s.waiters) == 0 && s.free() {
		s.inUse++
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()

	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				s.mu.Unlock()
				return ctx.Err()
			}
		}
		s.mu.Unlock()
		s.release() // granted while giving up: hand the slot on
		return ctx.Err()
	}
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse--
	s.grant()
}

func (s *slots) setLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = n
	s.grant()
}

func (s *slots) counts() (inUse, queued int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse, len(s.waiters)
}

func (s *slots) free() bool { return s.limit == 0 || s.inUse < s.limit }

// grant hands free slots to the longest waiters. Callers hold mu.
func (s *slots) grant() {
	for len(s.waiters) > 0 && s.free() {
		s.inUse++
		close(s.waiters[0])
		s.waiters = s.waiters[1:]
	}
}
