package pace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// simClock is simulated time for a pacer and a server: Sleep moves it on by at most a
// millisecond towards the sleeper's wake-up time and returns, so a test of minutes of
// pacing runs in moments. The pacer looks again and sleeps again; a crowd of sleepers moves
// the clock on a millisecond at a time, never past a budget they could have used.
type simClock struct {
	*testkit.Clock
	mu sync.Mutex
}

func newSimClock() *simClock {
	return &simClock{Clock: testkit.NewClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 0)}
}

func (c *simClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.Advance(min(d, time.Millisecond))
	}
	return ctx.Err()
}

// bucketServer is a token bucket of rate per second and burst on the simulated clock that
// answers as the gateway does: RateLimit-Policy and RateLimit on every answer (unless
// noPolicy or fields say otherwise), 429 and Retry-After when empty.
type bucketServer struct {
	clock       *simClock
	rate, burst float64
	// noPolicy leaves RateLimit-Policy out; fields, when set, replaces RateLimit.
	noPolicy bool
	fields   string
	// travel, when set, is how long request n (from 0) takes to reach the bucket.
	travel func(n int) time.Duration

	mu       sync.Mutex
	tokens   float64
	at       time.Time
	ok, many int
}

func (s *bucketServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.travel != nil {
		s.clock.Advance(s.travel(s.ok + s.many))
	}
	now := s.clock.Now()
	if s.at.IsZero() {
		s.tokens, s.at = s.burst, now
	}
	s.tokens = min(s.burst, s.tokens+s.rate*now.Sub(s.at).Seconds())
	s.at = now
	allowed := s.tokens >= 1
	if allowed {
		s.tokens--
	}
	secs := func(f float64) int { return int(math.Ceil(f)) }
	t := secs((s.burst - s.tokens) / s.rate)
	if !allowed {
		t = max(1, secs((1-s.tokens)/s.rate))
	}
	if !s.noPolicy {
		// As the gateway advertises a bucket: q the larger of rate and burst, w the time the
		// bucket takes to refill q.
		q := max(s.rate, s.burst)
		w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"sim";q=%d;w=%d`, int(q), secs(q/s.rate)))
	}
	w.Header().Set("RateLimit", cmpOr(s.fields, fmt.Sprintf(`"sim";r=%d;t=%d`, int(s.tokens), t)))
	if !allowed {
		s.many++
		w.Header().Set("Retry-After", strconv.Itoa(t))
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	s.ok++
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *bucketServer) counts() (ok, many int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ok, s.many
}

// send sends n requests one after another through c, as fast as it lets them go.
func send(t *testing.T, c *http.Client, url string, n int) {
	t.Helper()
	for range n {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		resp.Body.Close()
	}
}

// TestTransportStopsBeforeThe429: a client that sends 400 requests as fast as it can
// through a Transport never meets the server's 429, and its goodput is the server's rate.
func TestTransportStopsBeforeThe429(t *testing.T) {
	for _, tt := range []struct {
		name        string
		rate, burst float64
		noPolicy    bool
	}{
		{"a bucket of 40/s, burst 20", 40, 20, false},
		{"a bucket of 10/s, burst 50 (q above the rate)", 10, 50, false},
		{"a bucket of 5/s, burst 5, without RateLimit-Policy", 5, 5, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := newSimClock()
			srv := &bucketServer{clock: clk, rate: tt.rate, burst: tt.burst, noPolicy: tt.noPolicy}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			c := &http.Client{Transport: &Transport{Pacer: &Pacer{Clock: clk.Clock.Clock(), Sleep: clk.Sleep}}}
			start := clk.Now()
			const n = 400
			send(t, c, ts.URL, n)
			ok, many := srv.counts()
			if ok != n || many != 0 {
				t.Errorf("served %d, refused %d; want %d served and no 429", ok, many, n)
			}
			// The burst goes at once, the rest at the rate: the pacer wastes little.
			ideal := (n - tt.burst) / tt.rate
			took := clk.Now().Sub(start).Seconds()
			slack := 0.05
			if tt.noPolicy {
				slack = 0.5 // without a rate it waits out whole-second resets
			}
			if took < ideal || took > ideal*(1+slack) {
				t.Errorf("%d requests took %.2fs, want %.2fs to %.2fs (the server's rate)", n, took, ideal, ideal*(1+slack))
			}
		})
	}
}

// TestAFullBucketRefillsFromItsFirstRequest: a full bucket does not save up time, so its
// refill restarts when the first request reaches it. That one travels 80ms, the next two
// none: a pacer that counted the refill from when it sent the first would send the third
// too early.
func TestAFullBucketRefillsFromItsFirstRequest(t *testing.T) {
	clk := newSimClock()
	srv := &bucketServer{clock: clk, rate: 10, burst: 2, travel: func(n int) time.Duration {
		if n%3 == 0 {
			return 80 * time.Millisecond
		}
		return 0
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := &http.Client{Transport: &Transport{Pacer: &Pacer{Clock: clk.Clock.Clock(), Sleep: clk.Sleep}}}
	for range 20 {
		clk.Advance(time.Second) // idle: the bucket fills
		send(t, c, ts.URL, 3)
	}
	if ok, many := srv.counts(); ok != 60 || many != 0 {
		t.Errorf("served %d, refused %d; want 60 served and no 429", ok, many)
	}
}

// TestWithoutThePacerTheServerRefuses is the control of TestTransportStopsBeforeThe429:
// the same client without pacing meets 429s.
func TestWithoutThePacerTheServerRefuses(t *testing.T) {
	clk := newSimClock()
	srv := &bucketServer{clock: clk, rate: 40, burst: 20}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	send(t, ts.Client(), ts.URL, 100)
	if ok, many := srv.counts(); ok != 20 || many != 80 {
		t.Errorf("served %d, refused %d; want the burst of 20 served and 80 refused", ok, many)
	}
}

// TestRetryAfterHoldsEveryRequest: after a 429 the pacer sends nothing until Retry-After
// ends, in seconds or as a date, even when the RateLimit fields are malformed.
func TestRetryAfterHoldsEveryRequest(t *testing.T) {
	for _, tt := range []struct{ name, retryAfter, fields string }{
		{"seconds", "7", `"sim";r=0;t=7`},
		{"an HTTP date", "Sun, 01 Mar 2026 10:00:07 GMT", `"sim";r=0;t=7`},
		{"seconds, with malformed RateLimit", "7", `"sim";r=zero`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := newSimClock()
			p := &Pacer{Clock: clk.Clock.Clock(), Sleep: clk.Sleep}
			ticket, err := p.Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			ticket.Done(http.StatusTooManyRequests, http.Header{"Retry-After": {tt.retryAfter}, "Ratelimit": {tt.fields}})
			start := clk.Now()
			if _, err := p.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := clk.Now().Sub(start); got != 7*time.Second {
				t.Errorf("Wait after a 429 with Retry-After %s took %v, want 7s", tt.retryAfter, got)
			}
		})
	}
}

// TestMalformedFieldsNeitherStallNorPanic: answers whose fields do not parse leave the pacer
// as it was; a server that sends only garbage is not paced at all.
func TestMalformedFieldsNeitherStallNorPanic(t *testing.T) {
	clk := newSimClock()
	p := &Pacer{Clock: clk.Clock.Clock(), Sleep: clk.Sleep}
	for _, f := range []string{`"sim";r=0;t=999999999999`, `"sim";r=0`, `"sim";r=-5;t=1`, "\x00", `"sim;r=0;t=9`} {
		ticket, err := p.Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ticket.Done(http.StatusOK, http.Header{"Ratelimit": {f}, "Ratelimit-Policy": {`"sim";q=0;w=0`}})
	}
	start := clk.Now()
	if _, err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := clk.Now().Sub(start); got != 0 {
		t.Errorf("Wait after malformed fields took %v, want 0", got)
	}
}

// TestMaxWaitRefusesAtOnce: a request whose budget is back only after MaxWait fails at
// once, without sleeping, and is not counted in flight.
func TestMaxWaitRefusesAtOnce(t *testing.T) {
	clk := newSimClock()
	p := &Pacer{Clock: clk.Clock.Clock(), Sleep: clk.Sleep, MaxWait: 2 * time.Second}
	ticket, _ := p.Wait(t.Context())
	ticket.Done(http.StatusOK, http.Header{"Ratelimit": {`"day";r=0;t=86400`}, "Ratelimit-Policy": {`"day";q=1;w=86400`}})
	start := clk.Now()
	_, err := p.Wait(t.Context())
	if !errors.Is(err, ErrTooLong) {
		t.Errorf("Wait = %v, want ErrTooLong", err)
	}
	if got := clk.Now().Sub(start); got != 0 {
		t.Errorf("refusing took %v, want 0", got)
	}
	if p.inFlight != 0 {
		t.Errorf("in flight = %d, want 0", p.inFlight)
	}
}

// TestWaitEndsWithItsContext: a caller whose context ends stops waiting.
func TestWaitEndsWithItsContext(t *testing.T) {
	p := &Pacer{} // the wall clock
	ticket, _ := p.Wait(t.Context())
	ticket.Done(http.StatusTooManyRequests, http.Header{"Retry-After": {"3600"}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want the context's deadline", err)
	}
}

// TestTransportClosesTheBodyOfARefusedRequest: RoundTrip's contract holds on the pacer's
// own refusals too.
func TestTransportClosesTheBodyOfARefusedRequest(t *testing.T) {
	p := &Pacer{MaxWait: time.Second}
	ticket, _ := p.Wait(t.Context())
	ticket.Done(http.StatusServiceUnavailable, http.Header{"Retry-After": {"60"}})
	body := &closeRecorder{}
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/holds", body)
	_, err := (&Transport{Pacer: p}).RoundTrip(req)
	if !errors.Is(err, ErrTooLong) || !body.closed {
		t.Errorf("RoundTrip = %v, body closed %v; want ErrTooLong and the body closed", err, body.closed)
	}
}

type closeRecorder struct{ closed bool }

func (c *closeRecorder) Read([]byte) (int, error) { return 0, errors.New("not read") }
func (c *closeRecorder) Close() error             { c.closed = true; return nil }

// TestManyGoroutinesShareOnePacer: 25 goroutines sending through one Transport together
// never meet a 429, and leave nothing in flight. (Their goodput is not measured here: the
// simulated clock moves on while waiters poll, however long the loopback takes in real
// time. The rate-limiter scenario measures it on the wall clock.)
func TestManyGoroutinesShareOnePacer(t *testing.T) {
	clk := newSimClock()
	srv := &bucketServer{clock: clk, rate: 40, burst: 20}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	p := &Pacer{Clock: clk.Clock.Clock(), Sleep: clk.Sleep}
	c := &http.Client{Transport: &Transport{Pacer: p}}
	const workers, each = 25, 24
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { send(t, c, ts.URL, each) })
	}
	wg.Wait()
	ok, many := srv.counts()
	if ok != workers*each || many != 0 {
		t.Errorf("served %d, refused %d; want %d served and no 429", ok, many, workers*each)
	}
	if p.inFlight != 0 {
		t.Errorf("in flight = %d after every answer, want 0", p.inFlight)
	}
}

// TestBudgetsAreBounded: a server that names a new policy in every answer does not grow the
// pacer without end.
func TestBudgetsAreBounded(t *testing.T) {
	clk := newSimClock()
	p := &Pacer{Clock: clk.Clock.Clock(), Sleep: clk.Sleep}
	for i := range 1000 {
		ticket, err := p.Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ticket.Done(http.StatusOK, http.Header{"Ratelimit": {fmt.Sprintf(`"p%d";r=5;t=1`, i)}})
	}
	if len(p.budgets) != maxBudgets {
		t.Errorf("budgets = %d after 1,000 policy names, want %d", len(p.budgets), maxBudgets)
	}
}
