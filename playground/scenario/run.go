package scenario

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Options are a run's optional settings; the zero value runs the profile as written.
type Options struct {
	// Duration, when positive, scales every phase so the profile lasts about this long
	// (each phase keeps its share, and at least one second).
	Duration time.Duration
	// Now and Sleep are the clock; nil means the wall clock. The load schedule, the retry
	// back-offs and the per-second samples all read it.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand is the randomness (jitter, identity picks, greedy fans); nil means a source seeded
	// from the clock.
	Rand *rand.Rand
	// Log records knob changes and set-up steps; nil discards.
	Log *slog.Logger
	// MaxInFlight bounds the requests open at once; 0 means 2000. Arrivals beyond it are
	// counted as client errors rather than delayed, so the schedule stays open-model.
	MaxInFlight int
}

// Sample is one second of a run. Counts are attempts (retries included) that completed in
// that second, except Sent (attempts started) and Requests (first attempts started).
type Sample struct {
	T     int    `json:"t"` // seconds since the run started; the sample covers [T, T+1)
	Phase string `json:"phase"`
	// Sent counts attempts started; Requests counts unique requests (first attempts).
	Sent     int `json:"sent"`
	Requests int `json:"requests"`
	// Outcomes of attempts that completed in this second.
	OK           int `json:"ok"`            // 2xx
	TooMany      int `json:"too_many"`      // 429
	Unavailable  int `json:"unavailable"`   // 503
	ServerErrors int `json:"server_errors"` // other 5xx
	ClientErrors int `json:"client_errors"` // other 4xx, transport errors, dropped arrivals
	Timeouts     int `json:"timeouts"`      // the client gave up
	// Goodput counts unique requests that ended in success in this second.
	Goodput int `json:"goodput"`
	// Latency percentiles of accepted (2xx) attempts, in milliseconds; 0 with none.
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	// InFlight is the client side's open attempts at the end of the second.
	InFlight int `json:"in_flight"`
	// BackendInFlight is the work holding the backend's slots (all replicas), and
	// BackendCapacity the slots it has (0 = unlimited), both from the control hooks.
	BackendInFlight int `json:"backend_in_flight"`
	BackendQueued   int `json:"backend_queued"`
	BackendCapacity int `json:"backend_capacity"`
	// Counters are the scenario's own series (Scenario.Counters), e.g. "429:holds-per-account",
	// "queue_length", "admitted", "seats_sold".
	Counters map[string]float64 `json:"counters,omitempty"`
}

// Event is one entry of a run's knob timeline.
type Event struct {
	At   time.Duration `json:"at_ms"` // since the run started; JSON in milliseconds
	Kind string        `json:"kind"`  // phase, knob, setup, error
	What string        `json:"what"`
}

// Result is what a run measured: the series, the totals and per-phase statistics, and the
// expectations met or missed. Err is set when the run could not complete.
type Result struct {
	Scenario     string    `json:"scenario"`
	Profile      string    `json:"profile"`
	Started      time.Time `json:"started"`
	Series       []Sample  `json:"series"`
	Events       []Event   `json:"events"`
	Totals       Stats     `json:"totals"`
	Phases       []Stats   `json:"phases"`
	Expectations []Outcome `json:"expectations"`
	Err          string    `json:"error,omitempty"`
}

// Passed reports whether the run completed and met every expectation.
func (r Result) Passed() bool {
	if r.Err != "" {
		return false
	}
	for _, o := range r.Expectations {
		if !o.Passed {
			return false
		}
	}
	return true
}

// Outcome is one checked expectation: Want is the comparison as written with the other side's
// number filled in, Got the measured left side.
type Outcome struct {
	Name   string `json:"name"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Passed bool   `json:"passed"`
}

// Run is one scenario run in progress. Its methods are safe for concurrent use: the web UI
// subscribes and turns knobs while the runner goroutine records.
type Run struct {
	sc      Scenario
	profile *Profile
	done    chan struct{}

	mu     sync.Mutex
	series []Sample
	events []Event
	subs   map[chan Sample]struct{}
	result Result
}

// Start sets the system up for sc's profile (knob defaults, the backend's capacity, the
// scenario's limit, logged-in fans), then runs its phases in the background. It returns once
// set-up is done; the run ends when its phases do, when Stop is called or when ctx ends, and
// puts the system's knobs back as it found them.
func Start(ctx context.Context, sc Scenario, profile string, t Target, o Options) (*Run, error) {
	if _, err := sc.Profile(profile); err != nil {
		return nil, err
	}
	return nil, errors.New("scenario: the runner is not implemented yet")
}

// Subscribe returns a channel that receives every Sample recorded from now on, and a cancel
// function to call when done listening. The channel is closed when the run ends or cancel is
// called. Samples recorded before Subscribe are in History. A subscriber that does not keep
// up misses samples rather than slowing the run.
func (r *Run) Subscribe() (<-chan Sample, func()) {
	ch := make(chan Sample, 64)
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
		close(ch)
		return ch, func() {}
	default:
	}
	r.subs[ch] = struct{}{}
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[ch]; ok {
			delete(r.subs, ch)
			close(ch)
		}
	}
}

// History returns every Sample recorded so far.
func (r *Run) History() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Sample(nil), r.series...)
}

// Events returns the knob timeline so far.
func (r *Run) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Scenario is the scenario being run; Profile the profile.
func (r *Run) Scenario() Scenario { return r.sc }

// Profile is the profile being run, phases scaled by Options.Duration.
func (r *Run) Profile() Profile { return *r.profile }

// SetKnob changes a knob of the running system now (name as in Scenario.Knobs, value in the
// knob's kind), and records it on the timeline. A later phase that sets the same knob
// overrides it.
func (r *Run) SetKnob(ctx context.Context, name, value string) error {
	return errors.New("scenario: the runner is not implemented yet")
}

// Stop ends the run early; its Result covers what ran. It is safe to call more than once.
func (r *Run) Stop() {}

// Done is closed when the run has ended and Result is final.
func (r *Run) Done() <-chan struct{} { return r.done }

// Result is the run's outcome: final once Done is closed, partial before.
func (r *Run) Result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result
}
