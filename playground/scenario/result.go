package scenario

import "time"

// Sample is one second of a run.
type Sample struct {
	T     int    `json:"t"` // seconds since the run started; the sample covers [T, T+1)
	Phase string `json:"phase"`
	// Tally counts the attempts that completed in this second (Sent and Requests: that
	// started in it), and the latency of the accepted ones.
	Tally
	// InFlight is the client side's open jobs at the end of the second.
	InFlight int `json:"in_flight"`
	// BackendInFlight is the work holding the backend's slots (all replicas), BackendQueued
	// the work waiting for one, and BackendCapacity the slots (0 = unlimited), all read from
	// the control hooks' gauges; -1 when they could not be read.
	BackendInFlight int `json:"backend_in_flight"`
	BackendQueued   int `json:"backend_queued"`
	BackendCapacity int `json:"backend_capacity"`
	// Counters are the scenario's own series (Scenario.Counters), e.g. "429:holds-per-account",
	// "queue_length", "admitted", "seats_sold".
	Counters map[string]float64 `json:"counters,omitempty"`
	// Decisions are the gateway's rate-limit decisions in this second by path (store,
	// fallback, fail_closed…: see DecisionPaths), from all its traffic; nil when they could
	// not be read.
	Decisions map[string]float64 `json:"decisions,omitempty"`
}

// Event is one entry of a run's timeline.
type Event struct {
	At   time.Duration `json:"at"`   // since the run started, in nanoseconds in JSON
	Kind string        `json:"kind"` // phase, knob, setup, error
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
	// Audit are the run's changes to the gateway's policy as its audit trail recorded them,
	// newest first.
	Audit []AuditEntry `json:"audit,omitempty"`
	// Stopped is true when Stop or the context ended the run before its phases did; the
	// expectations are then not checked.
	Stopped bool   `json:"stopped,omitempty"`
	Err     string `json:"error,omitempty"`
}

// Passed reports whether the run completed and met every expectation.
func (r Result) Passed() bool {
	if r.Err != "" || r.Stopped {
		return false
	}
	for _, o := range r.Expectations {
		if !o.Passed {
			return false
		}
	}
	return true
}

// Outcome is one checked expectation: Want is the comparison as written with the other
// side's number filled in, Got the measured left side.
type Outcome struct {
	Name   string `json:"name"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Passed bool   `json:"passed"`
}
