// Package waitroom is BoxOffice's waitroom: the virtual queue of a flash sale and its signed
// admission passes.
//
// Fans join an event's queue and poll their place; an admitter lets them in at a set rate
// per second, however many waitroom replicas run; an admitted fan receives a short-lived
// pass (package pass) that inventory verifies on its own before holding seats of the event.
// All queue state lives in Redis (queue.go), so a restarted or scaled waitroom carries on.
//
// This file holds the domain: what a fan sees of the queue and the arithmetic of waiting.
package waitroom

import (
	"regexp"
	"time"

	"boxoffice.dev/platform/problem"
)

// Defaults for the process's variables (see run.go).
const (
	DefaultAdmitPerSecond = 50
	DefaultPassTTL        = 5 * time.Minute
	// DefaultQueueTTL is how long an event's queue outlives its last join or admission. A
	// flash sale lasts hours; a forgotten queue should not live forever in Redis.
	DefaultQueueTTL = 6 * time.Hour
	// MaxAdmitPerSecond bounds the admin knob: beyond it the queue admits a crowd per tick
	// and stops being a queue.
	MaxAdmitPerSecond = 100_000
	// DefaultMaxEventsPerTick bounds one admitter tick's work. A visit is one script round
	// trip, a fraction of a millisecond, so a tick stays well inside the default 100ms
	// interval; and since a listed event needs a visit only once a second (its budget is
	// per second), at that interval up to ten times this many sales admit at full rate.
	DefaultMaxEventsPerTick = 100
)

// State is where a fan is in an event's queue.
type State string

// The states.
const (
	Waiting  State = "waiting"
	Admitted State = "admitted" // holds a pass until PassExpiresAt
	Expired  State = "expired"  // was admitted, but the pass lapsed: join again
)

// Status is what a fan sees of their place.
type Status struct {
	EventID string `json:"event_id"`
	State   State  `json:"status"`
	// Position is 1 for the next fan in, 0 unless Waiting.
	Position int64 `json:"position"`
	// EstimatedWait is how long Position takes at the current rate; nil when admissions
	// are paused (rate 0) and the wait cannot be told.
	EstimatedWait *int64 `json:"estimated_wait_s,omitempty"`
	// Pass and PassExpiresAt are set when Admitted.
	Pass          string     `json:"pass,omitempty"`
	PassExpiresAt *time.Time `json:"pass_expires_at,omitempty"`
}

// EstimateWait is the whole seconds until the fan at position gets in, admitting rate fans
// a second: the fan at position rate goes in this second, the next one the second after.
// ok is false when rate is 0 (admissions paused).
func EstimateWait(position int64, rate int) (seconds int64, ok bool) {
	if rate <= 0 {
		return 0, false
	}
	if position <= 0 {
		return 0, true
	}
	return (position - 1) / int64(rate), true
}

// eventIDPattern keeps event ids safe inside Redis key hash tags: no braces, no colons.
var eventIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidateEventID rejects ids that could not be an event's, naming field in the error.
func ValidateEventID(field, id string) error {
	if !eventIDPattern.MatchString(id) {
		return problem.InvalidField(field, "want 1 to 64 letters, digits, '.', '_' or '-'")
	}
	return nil
}

// ValidateRate checks an admission rate from an admin, naming field in the error.
func ValidateRate(field string, rate int) error {
	if rate < 0 || rate > MaxAdmitPerSecond {
		return problem.InvalidField(field, "want 0 (paused) to %d admissions per second", MaxAdmitPerSecond)
	}
	return nil
}
