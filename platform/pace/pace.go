// Package pace lets an HTTP client pace itself from the rate limit fields its server sends
// (RateLimit and RateLimit-Policy from draft-ietf-httpapi-ratelimit-headers, and
// Retry-After): it keeps a local copy of each budget, spends it before every request and
// waits when it is empty, so that the client stops before the 429 rather than after it.
// It knows nothing of the server behind the fields. See docs/lessons/client-contract.md.
package pace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"boxoffice.dev/platform/clock"
)

// Pacer paces one client's requests that share the same limits: Wait before each request,
// Ticket.Done with its answer. It keeps a budget per policy the answers name: spent by Wait,
// refilled at the policy's q per w, lowered to each answer's r less the requests still in
// flight; after a 429 or 503 it holds every request until Retry-After. The zero value is
// ready to use and safe for concurrent use; it must not be copied after first use.
type Pacer struct {
	// Clock is the time source; the zero Clock reads time.Now.
	Clock clock.Clock
	// Sleep pauses a waiting caller; nil means clock.Sleep. A test pairs a fake Clock with
	// a Sleep that moves it.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxWait, when positive, bounds how long Wait waits: a request whose budget would not
	// be back in time is refused at once with ErrTooLong, rather than sent late.
	MaxWait time.Duration
	// Margin is added to every wait for a unit: the server's budget counts from when a
	// request reaches it, later than the pacer's by a delay that varies from one request to
	// the next. 0 means 50ms, a busy machine's or a data centre's jitter. It costs latency,
	// not rate: the budget refills during it, and what it gained is spent next.
	Margin time.Duration

	mu      sync.Mutex
	budgets map[string]*budget
	// blocked is when the last Retry-After ends.
	blocked time.Time
	// inFlight counts tickets not yet Done: spent locally, not yet reported by the server.
	inFlight int
	// answered is set by the first answer; until then one request at a time goes out, so
	// that callers starting together do not spend a budget nobody has seen.
	answered bool
}

// probeWait is how often a caller looks again while the first request is out.
const probeWait = 10 * time.Millisecond

// ErrTooLong is Wait's error when the budget would come back only after MaxWait.
var ErrTooLong = errors.New("pace: budget not back within the maximum wait")

// Ticket is one request Wait let through; report its answer with Done, exactly once.
type Ticket struct {
	p *Pacer
}

// Done reports the request's answer: its status and header fields, or 0 and nil when none
// came (a transport error, a timeout).
func (t Ticket) Done(status int, h http.Header) {
	if t.p != nil {
		t.p.observe(status, h)
	}
}

// Wait blocks until every budget the pacer knows has a unit, no Retry-After holds and
// (before the first answer) no other request is out; then spends a unit of each and returns
// the request's Ticket. It returns ctx's error if ctx ends first, and ErrTooLong at once if
// the wait would pass MaxWait.
func (p *Pacer) Wait(ctx context.Context) (Ticket, error) {
	sleep := p.Sleep
	if sleep == nil {
		sleep = clock.Sleep
	}
	start := p.Clock.Now()
	for {
		p.mu.Lock()
		now := p.Clock.Now()
		need := p.need(now)
		if need <= 0 {
			for _, b := range p.budgets {
				b.spend(now, p.inFlight)
			}
			p.inFlight++
			t := Ticket{p: p}
			p.mu.Unlock()
			return t, nil
		}
		p.mu.Unlock()
		if p.MaxWait > 0 && now.Add(need).Sub(start) > p.MaxWait {
			return Ticket{}, fmt.Errorf("%w (%v more needed)", ErrTooLong, need)
		}
		// Each pass sleeps until the budget it saw comes back; an answer that arrived in
		// the meantime is read on waking. Ends with ctx, or within MaxWait.
		if err := sleep(ctx, need); err != nil {
			return Ticket{}, err
		}
	}
}

// need is how long a request must wait at now: until Retry-After ends and the slowest
// budget has a unit (and the margin). Callers hold mu.
func (p *Pacer) need(now time.Time) time.Duration {
	need := p.blocked.Sub(now)
	if !p.answered && p.inFlight > 0 {
		need = max(need, probeWait)
	}
	margin := p.Margin
	if margin <= 0 {
		margin = defaultMargin
	}
	for _, b := range p.budgets {
		if d := b.need(now, p.inFlight); d > 0 {
			need = max(need, d+margin)
		}
	}
	return need
}

const defaultMargin = 50 * time.Millisecond

// observe applies an answer: Retry-After on a 429 or 503, and the RateLimit fields when they
// parse. Malformed fields are ignored whole.
func (p *Pacer) observe(status int, h http.Header) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight--
	if h == nil {
		return
	}
	p.answered = true
	now := p.Clock.Now()
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if after, ok := RetryAfter(h, now); ok && now.Add(after).After(p.blocked) {
			p.blocked = now.Add(after)
		}
	}
	limits, ok := ParseLimits(h)
	if !ok || len(limits) == 0 {
		return
	}
	policies, ok := ParsePolicies(h)
	if !ok {
		policies = nil // the budgets still hold; only their refill rate is unknown
	}
	if p.budgets == nil {
		p.budgets = map[string]*budget{}
	}
	for _, l := range limits {
		var rate, quota float64
		if i := indexPolicy(policies, l.Name); i >= 0 {
			pol := policies[i]
			if pol.Window <= 0 || pol.Unit != "" && pol.Unit != "requests" {
				// Not a rate of requests (a concurrency limit): time does not refill it,
				// and the server alone knows when a slot frees. Left to the server.
				delete(p.budgets, l.Name)
				continue
			}
			quota, rate = float64(pol.Quota), float64(pol.Quota)/pol.Window.Seconds()
		}
		b := p.budgets[l.Name]
		if b == nil {
			if len(p.budgets) >= maxBudgets {
				continue
			}
			b = &budget{}
			p.budgets[l.Name] = b
		}
		b.set(now, l, status != http.StatusTooManyRequests, quota, rate, p.inFlight)
	}
}

// maxBudgets bounds the policies a pacer keeps: a server naming more is not believed past
// them, and cannot make the pacer's memory grow without end.
const maxBudgets = 64

func indexPolicy(ps []Policy, name string) int {
	for i, p := range ps {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// budget is the local copy of one policy's budget: tokens at the time at, refilled at rate
// per second (from RateLimit-Policy; 0 when unknown) up to capacity, or, with no rate,
// back to capacity at reset.
type budget struct {
	tokens float64
	at     time.Time
	rate   float64
	// quota is q; seen the largest budget the server has shown (r+1 after a request it
	// counted). The capacity is the smaller: a bucket whose burst is below q never holds q.
	quota, seen float64
	reset       time.Time
	// held stops the refill from a spending that emptied a full budget until the next
	// answer: a full bucket does not save up time, so the server's refill restarts when the
	// request reaches it, which only its answer bounds.
	held bool
}

// set takes an answer's r (whole units left after the request; counted is false for a
// refused one) less the requests in flight, which may or may not be counted in it: the
// pessimistic reading. The first answer sets the budget; a later one only when the budget
// holds more than r+1 less those in flight. Between answers the budget follows the server's
// refill: an r rounded down, or overtaken by a newer one, would take back units still there.
func (b *budget) set(now time.Time, l Limit, counted bool, quota, rate float64, inFlight int) {
	r := float64(l.Remaining)
	if counted {
		b.seen = max(b.seen, r+1)
	} else {
		b.seen = max(b.seen, r, 1)
	}
	tokens := r - float64(inFlight)
	if !b.at.IsZero() {
		if lvl := b.level(now, inFlight); lvl <= tokens+1 {
			tokens = lvl
		}
	}
	b.quota, b.rate = quota, rate
	b.tokens, b.at, b.reset = tokens, now, now.Add(l.Reset)
	b.held = false
}

func (b *budget) capacity() float64 {
	if b.quota > 0 {
		return min(b.quota, b.seen)
	}
	return b.seen
}

// level is the budget at now, with inFlight requests spent but not yet at the server. The
// server's own budget stops at its capacity however long they take to arrive, so the
// local one, which counts them already, stops that much lower.
func (b *budget) level(now time.Time, inFlight int) float64 {
	ceiling := max(b.tokens, b.capacity()-float64(inFlight))
	switch {
	case b.held:
		return b.tokens
	case b.rate > 0:
		return min(b.tokens+b.rate*now.Sub(b.at).Seconds(), ceiling)
	case !b.reset.IsZero() && !now.Before(b.reset):
		return ceiling
	}
	return b.tokens
}

// need is how long until the budget has a unit: 0 if it has one now, or if nothing says
// when it comes back (no rate, and the reset spent): the server then decides.
func (b *budget) need(now time.Time, inFlight int) time.Duration {
	lvl := b.level(now, inFlight)
	switch {
	case lvl >= 1:
		return 0
	case b.rate > 0:
		// Rounded up to the microsecond, so that waking at the end finds the unit there.
		return (time.Duration((1-lvl)/b.rate*float64(time.Second)) + time.Microsecond).Truncate(time.Microsecond)
	case now.Before(b.reset):
		return b.reset.Sub(now)
	}
	return 0
}

// spend takes one unit at now. Spending from a full budget holds its refill until the next
// answer (held). Without a rate, a reset that has passed refills the budget once; the next
// answer sets the next reset.
func (b *budget) spend(now time.Time, inFlight int) {
	lvl := b.level(now, inFlight)
	b.held = b.held || b.rate > 0 && lvl >= b.capacity()-float64(inFlight)
	b.tokens = lvl - 1
	b.at = now
	if b.rate == 0 && !b.reset.IsZero() && !now.Before(b.reset) {
		b.reset = time.Time{}
	}
}
