// Package load is the playground's open-model load engine. Arrivals are scheduled by rate,
// whether or not earlier requests have returned: a slow server cannot slow the schedule down
// and so hide its own latency (the "coordinated omission" of closed-loop load tools, which
// wait for a response before sending the next request). For the same reason a job's latency
// is timed from when its arrival was due, not from when the engine got round to sending it:
// an engine running late shows its wait rather than hiding it. Every attempt is bounded by a
// timeout, every run by a duration and an arrival count, and what happens is bucketed per
// second into a Recorder: attempts sent, unique requests, outcomes (2xx, 429, 503, other 5xx,
// client errors, timeouts), goodput, and an HDR histogram of accepted latency.
//
// A Stream is one source of traffic with its own rate; each arrival runs the stream's Job,
// which sends one request or a whole journey through a Client that applies the client
// behaviour (retries, back-off, jitter, Retry-After, a retry budget, pacing from the
// RateLimit fields) and records every attempt.
package load

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/pace"
)

// Engine sends the arrivals of one or more Streams. Set its fields before Run; nil and zero
// fields take the defaults listed. One Engine runs one Run at a time.
type Engine struct {
	// HTTP sends the attempts; nil means a client tuned for many connections to one host.
	HTTP *http.Client
	// Recorder receives every attempt, and a count "429:<limit>" for each limit a 429 names;
	// nil means a new one started when Run starts.
	Recorder *Recorder
	// Now and Sleep are the clock: the schedule, the back-offs and the recorder read it;
	// nil means the wall clock.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter; nil means math/rand/v2's Float64. It is
	// called from concurrent requests.
	Rand func() float64
	// Timeout bounds each attempt; 0 means 2s.
	Timeout time.Duration
	// MaxInFlight bounds the jobs running at once; 0 means 2000. An arrival beyond it is
	// recorded as Dropped and not sent, so a stuck target costs memory in proportion to the
	// bound, not to the run's length.
	MaxInFlight int
	// MaxArrivals bounds the arrivals of a Run over all streams; 0 means 1,000,000.
	MaxArrivals int64
	// Poisson spaces arrivals by exponentially distributed gaps of the same mean (a Poisson
	// process: many independent clients); false spaces them evenly. Evenly spaced streams
	// alias against each other — two streams at 120/s and 30/s meet a limiter's refills at
	// the same phase every time — so simulations of many clients want Poisson.
	Poisson bool

	inFlight atomic.Int64
}

// Stream is one source of traffic.
type Stream struct {
	Name string
	// Rate is the arrival rate (per second) at elapsed time since the run started; it is
	// read again at every arrival, so it may change while the run goes on (a ramp, a knob).
	// A rate of 0 pauses the stream; one above MaxRate, or NaN, ends it with ErrRate.
	Rate func(elapsed time.Duration) float64
	// Behaviour is the retry behaviour of a request starting now; nil means no retries.
	Behaviour func() Behaviour
	// Budget is the stream's retry budget, set to each request's Behaviour.Budget as it
	// starts; nil makes one for the run.
	Budget *Budget
	// Pacer returns the pacer of arrival n's client, for a Behaviour that paces: one per
	// simulated client, since each paces from the budget the server reports to it. Nil means
	// one for the whole stream, for the run, waiting at most Timeout.
	Pacer func(n int64) *pace.Pacer
	// Job is what one arrival does; n counts the stream's arrivals from 0.
	Job func(ctx context.Context, c *Client, n int64)
}

// ErrTooManyArrivals is returned by Run when MaxArrivals cut it short.
var ErrTooManyArrivals = errors.New("load: arrival bound reached")

// MaxRate is the highest arrival rate a Stream may have, per second: far above what one
// machine's playground can serve, and low enough that a mistyped rate cannot spend the
// run's arrival bound in a moment. A stream whose rate goes above it, or is not a number,
// stops with ErrRate.
const MaxRate = 10_000

// ErrRate is returned by Run when a stream's rate was not a number from 0 to MaxRate.
var ErrRate = errors.New("load: rate out of range")

func (e *Engine) defaults() {
	if e.HTTP == nil {
		e.HTTP = &http.Client{Transport: &http.Transport{
			MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: 30 * time.Second,
		}}
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Sleep == nil {
		e.Sleep = clock.Sleep
	}
	if e.Rand == nil {
		e.Rand = rand.Float64
	}
	if e.Timeout <= 0 {
		e.Timeout = 2 * time.Second
	}
	if e.MaxInFlight <= 0 {
		e.MaxInFlight = 2000
	}
	if e.MaxArrivals <= 0 {
		e.MaxArrivals = 1_000_000
	}
	if e.Recorder == nil {
		e.Recorder = NewRecorder(e.Now)
	}
}

// InFlight is the number of jobs running now.
func (e *Engine) InFlight() int { return int(e.inFlight.Load()) }

// Run schedules every stream's arrivals for d (measured from the Recorder's start), then
// waits for the jobs still running, each bounded by its attempts' timeouts. It returns
// ctx's error when ctx ended it early, ErrTooManyArrivals when the arrival bound did, an
// ErrRate when a stream's rate was out of range (that stream stops, the others go on), nil
// otherwise. Jobs see a context that ends when ctx does.
func (e *Engine) Run(ctx context.Context, d time.Duration, streams ...Stream) error {
	e.defaults()
	var (
		jobs     sync.WaitGroup
		arrivals atomic.Int64
		errMu    sync.Mutex
		runErr   error
	)
	var schedulers sync.WaitGroup
	for _, s := range streams {
		if s.Budget == nil {
			s.Budget = NewBudget(0, 0)
		}
		if s.Pacer == nil {
			p := &pace.Pacer{Clock: clock.Func(e.Now), Sleep: e.Sleep, MaxWait: e.Timeout}
			s.Pacer = func(int64) *pace.Pacer { return p }
		}
		schedulers.Go(func() {
			err := e.schedule(ctx, d, s, &arrivals, &jobs)
			if err != nil {
				errMu.Lock()
				runErr = errors.Join(runErr, err)
				errMu.Unlock()
			}
		})
	}
	schedulers.Wait()
	jobs.Wait()
	if runErr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return runErr
}

// schedule starts s's arrivals until d has elapsed. Arrival k+1 is due one gap (1/rate, or
// drawn around it) after arrival k, at the rate in force then; the wait is measured from when
// arrival k was due, not from when it was started, so a late wake-up is caught up rather
// than lost.
func (e *Engine) schedule(ctx context.Context, d time.Duration, s Stream, arrivals *atomic.Int64, jobs *sync.WaitGroup) error {
	start := e.Recorder.Start()
	due := e.Now().Sub(start)
	if due < 0 {
		due = 0
	}
	var n int64
	for {
		rate := s.Rate(due)
		if !(rate <= MaxRate) { // NaN too
			return fmt.Errorf("stream %s: %g/s: %w (want 0 to %d/s)", s.Name, rate, ErrRate, MaxRate)
		}
		if rate <= 0 {
			// Paused: look again a little later.
			due += 100 * time.Millisecond
		} else {
			if due >= d {
				return nil
			}
			if wait := start.Add(due).Sub(e.Now()); wait > 0 {
				if err := e.Sleep(ctx, wait); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if arrivals.Add(1) > e.MaxArrivals {
				return ErrTooManyArrivals
			}
			e.arrive(ctx, s, n, start.Add(due), jobs)
			n++
			due += e.gap(rate)
			continue
		}
		if due >= d {
			return nil
		}
		if wait := start.Add(due).Sub(e.Now()); wait > 0 {
			if err := e.Sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
}

// maxGap is the longest wait between two arrivals: a tiny rate (1e-300/s) would otherwise
// make a gap too long for a Duration, which converts to a negative one.
const maxGap = time.Hour

// gap is the time to the next arrival at rate (0 < rate <= MaxRate), at most maxGap.
func (e *Engine) gap(rate float64) time.Duration {
	g := float64(time.Second) / rate
	if e.Poisson {
		g *= -math.Log(1 - e.Rand())
	}
	return time.Duration(min(g, float64(maxGap)))
}

// arrive starts one job, due at at, or records it as dropped when MaxInFlight jobs are
// running.
func (e *Engine) arrive(ctx context.Context, s Stream, n int64, at time.Time, jobs *sync.WaitGroup) {
	if e.inFlight.Add(1) > int64(e.MaxInFlight) {
		e.inFlight.Add(-1)
		e.Recorder.Sent(s.Name, true)
		e.Recorder.Done(s.Name, Dropped, 0)
		return
	}
	c := &Client{e: e, stream: s.Name, budget: s.Budget, due: at}
	if s.Behaviour != nil {
		c.behaviour = s.Behaviour()
	}
	if c.behaviour.Pace {
		c.pacer = s.Pacer(n)
	}
	s.Budget.Set(c.behaviour.Budget, c.behaviour.BudgetReserve)
	jobs.Go(func() {
		defer e.inFlight.Add(-1)
		s.Job(ctx, c, n)
	})
}

// Client sends one job's requests, recording every attempt under its stream. A job may use it
// for several requests (a fan's journey), one at a time; it is not shared between jobs.
type Client struct {
	e         *Engine
	stream    string
	behaviour Behaviour
	budget    *Budget
	// pacer is the client's, when its behaviour paces; nil otherwise.
	pacer *pace.Pacer
	// due is when the job's arrival was scheduled, until its first attempt is sent; zero
	// after.
	due time.Time
}

// Response is an attempt's answer: the status, headers and up to 64 KiB of body.
type Response struct {
	Status  int
	Header  http.Header
	Body    []byte
	Outcome Outcome
	// Latency is the time from when the attempt was due to its answer: for a job's first
	// attempt, from when its arrival was scheduled, so that an engine running late (a GC
	// pause, a starved CPU) shows its wait in the latency instead of hiding it; for later
	// attempts, from when the job sent them. ServiceTime is from the send alone.
	Latency     time.Duration
	ServiceTime time.Duration
}

// Recorder is where the client records; jobs add their own counters to it.
func (c *Client) Recorder() *Recorder { return c.e.Recorder }

// Rand returns a number in [0, 1) from the engine's source.
func (c *Client) Rand() float64 { return c.e.Rand() }

// Sleep pauses the job on the engine's clock, ending early with ctx.
func (c *Client) Sleep(ctx context.Context, d time.Duration) error { return c.e.Sleep(ctx, d) }

// Now reads the engine's clock.
func (c *Client) Now() time.Time { return c.e.Now() }

// Do sends a request built by build with the stream's retry behaviour: after a retryable
// outcome it pauses as the behaviour says and builds the request again, until an attempt
// succeeds or is not retryable, the retries or the budget run out, or ctx ends. It returns
// the last attempt's response (nil when none got one) and records goodput on success.
func (c *Client) Do(ctx context.Context, build func(ctx context.Context) (*http.Request, error)) *Response {
	return c.do(ctx, c.behaviour, build)
}

// Once sends one attempt, never retried (a poll, a step whose failure the job handles).
func (c *Client) Once(ctx context.Context, build func(ctx context.Context) (*http.Request, error)) *Response {
	return c.do(ctx, Behaviour{Pace: c.behaviour.Pace}, build)
}

// CounterPacedOut counts the requests a pacing client gave up on before sending them: its
// budget would not be back within the engine's Timeout.
const CounterPacedOut = "paced_out"

func (c *Client) do(ctx context.Context, b Behaviour, build func(ctx context.Context) (*http.Request, error)) *Response {
	c.budget.Request()
	var last *Response
	for attempt := 0; ; attempt++ {
		var ticket pace.Ticket
		if b.Pace && c.pacer != nil {
			t, err := c.pacer.Wait(ctx)
			if err != nil && ctx.Err() != nil { // the job is cut off: nothing to record
				return cmp.Or(last, &Response{Outcome: failure(ctx, err)})
			}
			if err != nil {
				return c.pacedOut(attempt == 0, last)
			}
			ticket = t
		}
		resp := c.attempt(ctx, build, attempt == 0)
		ticket.Done(resp.Status, resp.Header)
		last = resp
		if resp.Outcome == OK {
			c.e.Recorder.Succeeded(c.stream)
			return resp
		}
		if !Retryable(resp.Outcome) || attempt >= b.Retries || ctx.Err() != nil {
			return resp
		}
		if !c.budget.Retry() {
			return resp
		}
		var hr *http.Response
		if resp.Status != 0 {
			hr = &http.Response{StatusCode: resp.Status, Header: resp.Header}
		}
		if pause := b.Pause(attempt+1, hr, c.e.Now(), c.e.Rand); pause > 0 && c.e.Sleep(ctx, pause) != nil {
			return resp
		}
	}
}

// pacedOut records a request the pacer would not let go in time: never sent, so Dropped
// when it is the first attempt; a retry is simply not made, and last stands.
func (c *Client) pacedOut(first bool, last *Response) *Response {
	c.e.Recorder.Count(CounterPacedOut, 1)
	if !first {
		return last
	}
	c.e.Recorder.Sent(c.stream, true)
	c.e.Recorder.Done(c.stream, Dropped, 0)
	return &Response{Outcome: Dropped}
}

// attempt sends one request within the engine's timeout and records it.
func (c *Client) attempt(ctx context.Context, build func(ctx context.Context) (*http.Request, error), first bool) *Response {
	ctx, cancel := context.WithTimeout(ctx, c.e.Timeout)
	defer cancel()
	c.e.Recorder.Sent(c.stream, first)
	req, err := build(ctx)
	if err != nil {
		c.e.Recorder.Done(c.stream, ClientError, 0)
		return &Response{Outcome: ClientError}
	}
	sent := c.e.Now()
	due := sent
	if !c.due.IsZero() {
		if c.due.Before(sent) {
			due = c.due
		}
		c.due = time.Time{}
	}
	resp, err := c.e.HTTP.Do(req)
	var out *Response
	if err == nil {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_, _ = io.Copy(io.Discard, resp.Body) // drain, so the connection is reused
		resp.Body.Close()
		out = &Response{Status: resp.StatusCode, Header: resp.Header, Body: body, Outcome: Classify(resp.StatusCode)}
		if rerr != nil {
			out.Outcome = failure(ctx, rerr)
		}
	} else {
		out = &Response{Outcome: failure(ctx, err)}
	}
	answered := c.e.Now()
	out.Latency, out.ServiceTime = answered.Sub(due), answered.Sub(sent)
	c.e.Recorder.Done(c.stream, out.Outcome, out.Latency)
	if out.Outcome == TooMany {
		for _, rule := range ViolatedPolicies(out.Body) {
			c.e.Recorder.Count("429:"+rule, 1)
		}
	}
	return out
}

// ViolatedPolicies reads the names of the limits a 429's problem+json body says were
// exceeded (the gateway's "violated-policies" member); nil when the body has none.
func ViolatedPolicies(body []byte) []string {
	var p struct {
		Violated []string `json:"violated-policies"`
	}
	if json.Unmarshal(body, &p) != nil {
		return nil
	}
	return p.Violated
}

// failure tells the client giving up (the attempt's deadline) from the connection failing.
func failure(ctx context.Context, err error) Outcome {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Timeout
	}
	return TransportError
}
