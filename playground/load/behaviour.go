package load

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"boxoffice.dev/platform/pace"
)

// Behaviour is how a simulated client reacts to a failed attempt (a 429, a 5xx, a timeout or
// a transport error). The zero value never retries.
type Behaviour struct {
	// Retries is how many times a request is tried again after its first attempt.
	Retries int
	// Backoff is the first pause before a retry, doubled after each one up to MaxBackoff;
	// 0 retries at once (the "naive" client).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Jitter makes each pause "full jitter": uniform in [0, pause). Without it every client
	// that failed together retries together.
	Jitter bool
	// RetryAfter waits at least what a 429's or 503's Retry-After asks (capped by
	// MaxRetryAfter, 0 meaning 30s) before retrying.
	RetryAfter    bool
	MaxRetryAfter time.Duration
	// Budget, when positive, caps retries at that share of requests (0.1: one retry per ten
	// requests), plus a small reserve of BudgetReserve retries (0 means 10) for a quiet
	// client. It is shared by every request the Behaviour's Budget tracks.
	Budget        float64
	BudgetReserve float64
	// Pace waits before every attempt for the budget the server's RateLimit fields leave
	// (a pace.Pacer per client, Stream.Pacer), so that the client stops before the 429
	// rather than after it.
	Pace bool
}

// The policy names a scenario or a knob may use.
const (
	PolicyNone          = "none"           // one attempt
	PolicyNaive         = "naive"          // N immediate retries
	PolicyBackoff       = "backoff"        // N retries, exponential back-off with full jitter
	PolicyRetryAfter    = "retry-after"    // backoff, and never before Retry-After
	PolicyBackoffBudget = "backoff-budget" // retry-after, within a 10% retry budget
	PolicyPace          = "pace"           // retry-after, and paced from the RateLimit fields
)

// Policies lists the policy names in order of sophistication.
var Policies = []string{PolicyNone, PolicyNaive, PolicyBackoff, PolicyRetryAfter, PolicyBackoffBudget, PolicyPace}

// Policy returns the named Behaviour with retries retries (0 means 3). "" means none.
// The back-off starts at 100ms and is capped at 2s: long enough to spread a crowd of
// clients over a few seconds, short enough to see recovery within a short run.
func Policy(name string, retries int) (Behaviour, error) {
	if retries <= 0 {
		retries = 3
	}
	backoff := Behaviour{Retries: retries, Backoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, Jitter: true}
	switch name {
	case "", PolicyNone:
		return Behaviour{}, nil
	case PolicyNaive:
		return Behaviour{Retries: retries}, nil
	case PolicyBackoff:
		return backoff, nil
	case PolicyRetryAfter:
		backoff.RetryAfter = true
		return backoff, nil
	case PolicyBackoffBudget:
		backoff.RetryAfter = true
		backoff.Budget = 0.1
		return backoff, nil
	case PolicyPace:
		backoff.RetryAfter = true
		backoff.Pace = true
		return backoff, nil
	}
	return Behaviour{}, fmt.Errorf("retry policy %q: want one of %s", name, strings.Join(Policies, ", "))
}

// Pause is how long to wait before retry number n (1 for the first retry) after an attempt
// answered resp (nil after a timeout or transport error). rnd returns a number in [0, 1).
func (b Behaviour) Pause(n int, resp *http.Response, now time.Time, rnd func() float64) time.Duration {
	var d time.Duration
	if b.Backoff > 0 {
		ceiling := float64(b.Backoff) * math.Pow(2, float64(n-1))
		if b.MaxBackoff > 0 && ceiling > float64(b.MaxBackoff) {
			ceiling = float64(b.MaxBackoff)
		}
		d = time.Duration(ceiling)
		if b.Jitter {
			d = time.Duration(rnd() * ceiling)
		}
	}
	if b.RetryAfter && resp != nil {
		if ra, ok := pace.RetryAfter(resp.Header, now); ok {
			limit := b.MaxRetryAfter
			if limit <= 0 {
				limit = 30 * time.Second
			}
			ra = min(ra, limit)
			if ra > d {
				// Spread clients over the second after the server's time, as they would be
				// with jittered clocks; all retrying at one instant is the storm again.
				d = ra
				if b.Jitter {
					d += time.Duration(rnd() * float64(time.Second))
				}
			}
		}
	}
	return d
}

// Retryable reports whether an attempt's outcome is worth another attempt: throttled,
// unavailable, a server error, a timeout or a transport failure. Other 4xx are the client's
// fault and would fail again.
func Retryable(o Outcome) bool {
	switch o {
	case TooMany, Unavailable, ServerError, Timeout, TransportError:
		return true
	}
	return false
}

// Budget is a retry budget: every request deposits Ratio of a token, every retry spends one,
// and a retry without a token is not made. The balance starts at, and is capped by, the
// reserve, so a burst of failures can never turn into more than reserve + Ratio × requests
// retries. It is safe for concurrent use; the zero value is off and allows every retry.
type Budget struct {
	mu      sync.Mutex
	ratio   float64
	reserve float64
	balance float64
}

// NewBudget returns a budget of ratio retries per request with reserve retries in hand
// (0 means 10).
func NewBudget(ratio, reserve float64) *Budget {
	if reserve <= 0 {
		reserve = 10
	}
	return &Budget{ratio: ratio, reserve: reserve, balance: reserve}
}

// Set changes the ratio and the reserve (0 means 10), keeping the balance within the new
// reserve; a ratio of 0 turns the budget off. A budget turned on starts with its reserve.
func (b *Budget) Set(ratio, reserve float64) {
	if reserve <= 0 {
		reserve = 10
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ratio == ratio && b.reserve == reserve {
		return
	}
	if b.ratio <= 0 {
		b.balance = reserve
	}
	b.ratio, b.reserve = ratio, reserve
	b.balance = min(b.balance, reserve)
}

// Request records a first attempt.
func (b *Budget) Request() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ratio > 0 {
		b.balance = min(b.balance+b.ratio, b.reserve)
	}
}

// Retry takes a token for one retry, reporting false when none is left. A budget that is
// off allows every retry.
func (b *Budget) Retry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ratio <= 0 {
		return true
	}
	if b.balance < 1 {
		return false
	}
	b.balance--
	return true
}
