// Package control is the hook every BoxOffice service mounts so the playground can turn a
// healthy service into a slow, failing, down or saturated one, on demand: injected latency,
// an error rate, an outage, and a capacity (concurrent slots × service time) beyond which
// requests queue, as they do in front of a real saturated backend.
//
// The knobs reach one replica through its HTTP Handler, and every replica of a service at
// once through a plain NATS subject, boxoffice.control.<service>. Health, readiness, metrics
// and the control endpoint itself are never faulted: an injected outage must look like a
// down backend to clients, not like a dead process to the orchestrator.
package control

import (
	"encoding/json"
	"time"

	"boxoffice.dev/platform/problem"
)

// Knobs are the faults and capacity a Hook applies. The zero value is a healthy service
// with unlimited capacity.
//
// Capacity is MaxConcurrent / ServiceTime requests per second: with 4 slots and 50ms of
// service time, 80 req/s are served at once and anything more waits for a slot, so latency
// grows with the queue until the caller's deadline gives up.
type Knobs struct {
	Latency       time.Duration // added to every request
	ErrorRate     float64       // 0..1 share of requests answered 503 (problem+json)
	Outage        bool          // every request answered 503 (a down backend)
	MaxConcurrent int           // 0 = unlimited; requests beyond it queue for a slot
	ServiceTime   time.Duration // simulated work while holding a slot
}

// knobsJSON is the wire form: durations in milliseconds, which is what a person types.
type knobsJSON struct {
	LatencyMS     float64 `json:"latency_ms"`
	ErrorRate     float64 `json:"error_rate"`
	Outage        bool    `json:"outage"`
	MaxConcurrent int     `json:"max_concurrent"`
	ServiceTimeMS float64 `json:"service_time_ms"`
}

// Validate reports the first knob out of range as a problem.Invalid error naming its JSON
// field.
func (k Knobs) Validate() error {
	switch {
	case k.Latency < 0:
		return problem.InvalidField("latency_ms", "must not be negative")
	case !(k.ErrorRate >= 0 && k.ErrorRate <= 1): // also rejects NaN
		return problem.InvalidField("error_rate", "must be between 0 and 1")
	case k.MaxConcurrent < 0:
		return problem.InvalidField("max_concurrent", "must not be negative (0 means unlimited)")
	case k.ServiceTime < 0:
		return problem.InvalidField("service_time_ms", "must not be negative")
	}
	return nil
}

// MarshalJSON writes the millisecond wire form.
func (k Knobs) MarshalJSON() ([]byte, error) { return json.Marshal(k.wire()) }

// UnmarshalJSON reads the millisecond wire form; absent fields are zero. It does not
// validate: Set does.
func (k *Knobs) UnmarshalJSON(b []byte) error {
	var w knobsJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*k = w.knobs()
	return nil
}

func (k Knobs) wire() knobsJSON {
	return knobsJSON{
		LatencyMS:     ms(k.Latency),
		ErrorRate:     k.ErrorRate,
		Outage:        k.Outage,
		MaxConcurrent: k.MaxConcurrent,
		ServiceTimeMS: ms(k.ServiceTime),
	}
}

func (w knobsJSON) knobs() Knobs {
	return Knobs{
		Latency:       fromMS(w.LatencyMS),
		ErrorRate:     w.ErrorRate,
		Outage:        w.Outage,
		MaxConcurrent: w.MaxConcurrent,
		ServiceTime:   fromMS(w.ServiceTimeMS),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fromMS(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
