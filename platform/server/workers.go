package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/pprof"
	"slices"
	"sync"
	"time"
)

// Go runs f on its own goroutine (pprof label worker=name) as a worker of the process: a
// relay, a sweeper, a consumer. Call it while building; it starts at once. f's ctx ends once
// the listeners have drained (a request may hand it work until then), and f should return
// nil; workers still running after SHUTDOWN_TIMEOUT less the fifth kept for Close are
// reported and left behind. An error from f stops the process as a signal would and Run
// returns it: a loop that gave up must not leave a process that looks healthy. After shutdown
// began, Go starts nothing.
func (s *Server) Go(name string, f func(ctx context.Context) error) {
	w := s.work
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		s.Log.Warn("worker not started: the process is stopping", "worker", name)
		return
	}
	w.running[name]++
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		var err error
		pprof.Do(w.ctx, pprof.Labels("worker", name), func(ctx context.Context) { err = f(ctx) })
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.running[name]--; w.running[name] == 0 {
			delete(w.running, name)
		}
		if err == nil || w.ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return
		}
		s.Log.Error("worker failed", "worker", name, "error", err)
		w.errs = append(w.errs, fmt.Errorf("worker %s: %w", name, err))
		w.failOnce.Do(func() { close(w.failed) })
	}()
}

// Every runs job every interval as a worker named name (see Go), the one way a service runs
// periodic background work: a sweeper, an admitter, key rotation. A failing job is logged and
// tried again at the next tick, so a database blip does not stop the process; the first run
// is one interval after the call.
func (s *Server) Every(name string, interval time.Duration, job func(ctx context.Context) error) {
	s.Go(name, func(ctx context.Context) error {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			if err := job(ctx); err != nil && ctx.Err() == nil {
				s.Log.WarnContext(ctx, "periodic job failed", "worker", name, "error", err)
			}
		}
	})
}

// workers tracks the goroutines Go started.
type workers struct {
	ctx      context.Context // the workers' context, ended by stop
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	failed   chan struct{} // closed at the first failure
	failOnce sync.Once

	mu       sync.Mutex
	running  map[string]int // by name, for reporting the ones that outlive the deadline
	errs     []error
	stopping bool
}

// newWorkers returns workers whose context keeps parent's values but not its cancellation:
// only stop ends it, after the listeners have drained.
func newWorkers(parent context.Context) *workers {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	return &workers{ctx: ctx, cancel: cancel, failed: make(chan struct{}), running: map[string]int{}}
}

// stop cancels the workers and waits for them until ctx ends. It returns their failures
// and, past ctx, which are still running. Only the first call waits; a later one returns nil
// at once: what outlived the first call's deadline would only delay closing further.
func (w *workers) stop(ctx context.Context) error {
	w.mu.Lock()
	first := !w.stopping
	w.stopping = true
	w.mu.Unlock()
	w.cancel()
	if !first {
		return nil
	}

	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	var late error
	select {
	case <-done:
	case <-ctx.Done():
		w.mu.Lock()
		late = fmt.Errorf("workers still running after the shutdown deadline: %v", slices.Sorted(maps.Keys(w.running)))
		w.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(append(w.errs, late)...)
}
