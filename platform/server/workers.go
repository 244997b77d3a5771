package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/pprof"
	"slices"
	"sync"
)

// Go runs f on its own goroutine as a worker of the process: a relay, a sweeper, a consumer,
// anything that works beside the listeners. Call it while building (in Build); a worker
// starts at once, so it may warm a cache before the process serves.
//
// f's ctx ends at shutdown, once the listeners have drained (a request finishing during the
// drain may still hand it work, an outbox row to relay), and f should then return nil. Run
// waits for every worker within SHUTDOWN_TIMEOUT, counted from the start of shutdown, less
// the fifth kept for closing (Server.Close), and reports the ones still running after it:
// they are left running while the process closes its database and connections, and exits.
// A worker returning an error before that stops the process as a signal would, and Run
// returns the error: a loop that gave up must not leave a process that looks healthy.
// f returning nil earlier just ends that worker.
//
// The goroutine carries the pprof label worker=name, so a goroutine dump names it. After
// shutdown began, Go starts nothing.
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
