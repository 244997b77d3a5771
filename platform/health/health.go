// Package health answers the two questions an orchestrator or a load balancer asks a process.
//
// /healthz — "is this process alive?" — answers 200 as long as the process can serve HTTP at
// all; a failing liveness probe gets the process restarted, so it must never depend on
// anything outside the process.
//
// /readyz — "should this instance receive traffic now?" — runs the registered checks (this
// instance's own connections, warmed caches) and answers 503 while any fails or while the
// process is draining for shutdown. A failing readiness probe only takes the instance out of
// rotation. Checks must be about this instance: a check on a dependency every replica shares
// would take all of them out at once, turning a partial failure into a full outage.
package health

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Check reports whether one dependency of this instance is usable. It must return quickly and
// honour ctx.
type Check func(ctx context.Context) error

// Checker holds the readiness checks of one process. The zero value is not usable; call New.
// It is safe for concurrent use.
type Checker struct {
	timeout  time.Duration
	draining atomic.Bool

	mu     sync.RWMutex
	checks map[string]Check
}

// New returns a Checker whose checks each get timeout to answer (0 means one second).
func New(timeout time.Duration) *Checker {
	if timeout <= 0 {
		timeout = time.Second
	}
	return &Checker{timeout: timeout, checks: map[string]Check{}}
}

// Add registers a readiness check under name, replacing any check of that name.
func (c *Checker) Add(name string, check Check) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks[name] = check
}

// SetDraining marks the process as shutting down: readiness fails from now on, so balancers
// stop sending new work while in-flight requests finish.
func (c *Checker) SetDraining() { c.draining.Store(true) }

// Report is the readiness of the process and of each check ("ok" or the error text).
type Report struct {
	Ready    bool              `json:"ready"`
	Draining bool              `json:"draining,omitempty"`
	Checks   map[string]string `json:"checks"`
}

// Ready runs every check concurrently and reports the result.
func (c *Checker) Ready(ctx context.Context) Report {
	c.mu.RLock()
	names := make([]string, 0, len(c.checks))
	for name := range c.checks {
		names = append(names, name)
	}
	sort.Strings(names)
	checks := make([]Check, len(names))
	for i, name := range names {
		checks[i] = c.checks[name]
	}
	c.mu.RUnlock()

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	results := make([]string, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Go(func() {
			results[i] = "ok"
			if err := check(ctx); err != nil {
				results[i] = err.Error()
			}
		})
	}
	wg.Wait()

	r := Report{Ready: !c.draining.Load(), Draining: c.draining.Load(), Checks: make(map[string]string, len(names))}
	for i, name := range names {
		r.Checks[name] = results[i]
		if results[i] != "ok" {
			r.Ready = false
		}
	}
	return r
}

// LiveHandler serves /healthz: always 200 while the process serves HTTP.
func (c *Checker) LiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// ReadyHandler serves /readyz: 200 when every check passes and the process is not draining,
// 503 otherwise, with the report as JSON either way.
func (c *Checker) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := c.Ready(r.Context())
		status := http.StatusOK
		if !rep.Ready {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, rep)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
