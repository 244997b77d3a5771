package load

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/platform/testkit"
)

// TestSlowServerDoesNotSlowTheSchedule is the coordinated-omission test: a server that takes
// 300ms per request, far longer than the 20ms between arrivals, still receives arrivals at
// the scheduled rate. A closed-loop client would send one request per 300ms per worker and
// report a latency the schedule never saw.
func TestSlowServerDoesNotSlowTheSchedule(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
		}
		served.Add(1)
	}))
	defer srv.Close()

	const rate, d = 50.0, 2 * time.Second
	e := &Engine{Timeout: time.Second}
	var maxInFlight atomic.Int64
	err := e.Run(context.Background(), d, Stream{
		Name: "slow", Rate: func(time.Duration) float64 { return rate },
		Job: func(ctx context.Context, c *Client, n int64) {
			if in := int64(e.InFlight()); in > maxInFlight.Load() {
				maxInFlight.Store(in)
			}
			c.Do(ctx, get(srv.URL))
		},
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	var total Counts
	for _, i := range e.Recorder.Seconds() {
		total.Add(e.Recorder.Second(i).Total())
	}
	want := int(rate * d.Seconds())
	if total.Sent < want-2 || total.Sent > want+1 {
		t.Errorf("attempts sent in %v at %g/s = %d, want %d (the schedule must not wait for responses)", d, rate, total.Sent, want)
	}
	if got := total.Outcomes[OK]; got != total.Sent {
		t.Errorf("2xx = %d, want every one of the %d attempts", got, total.Sent)
	}
	// 300ms of service at 50/s keeps about 15 requests open at once.
	if got := maxInFlight.Load(); got < 10 {
		t.Errorf("most jobs in flight = %d, want at least 10 (arrivals overlapping the slow responses)", got)
	}
	if p50 := total.Quantile(50); p50 < 290 || p50 > 400 {
		t.Errorf("p50 latency = %.1fms, want about the server's 300ms", p50)
	}
}

// TestScheduleFollowsTheRate checks the arrival count against the rate on a fake clock,
// for even and Poisson spacing, a ramp and a paused stream.
func TestScheduleFollowsTheRate(t *testing.T) {
	tests := []struct {
		name     string
		rate     func(time.Duration) float64
		poisson  bool
		d        time.Duration
		min, max int64
	}{
		{"steady 100/s for 10s", func(time.Duration) float64 { return 100 }, false, 10 * time.Second, 1000, 1000},
		{"ramp 0→200/s over 10s", func(e time.Duration) float64 { return 20 * e.Seconds() }, false, 10 * time.Second, 990, 1010},
		{"poisson 100/s for 10s", func(time.Duration) float64 { return 100 }, true, 10 * time.Second, 900, 1100},
		{"paused", func(time.Duration) float64 { return 0 }, false, 10 * time.Second, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			seed := uint64(1)
			e := &Engine{Now: clock.now, Sleep: clock.sleep, Poisson: tt.poisson, Rand: func() float64 {
				seed = seed*6364136223846793005 + 1442695040888963407 // one goroutine schedules
				return float64(seed>>11) / (1 << 53)
			}}
			var arrivals atomic.Int64
			err := e.Run(context.Background(), tt.d, Stream{Name: "s", Rate: tt.rate,
				Job: func(context.Context, *Client, int64) { arrivals.Add(1) }})
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			if got := arrivals.Load(); got < tt.min || got > tt.max {
				t.Errorf("arrivals = %d, want %d..%d", got, tt.min, tt.max)
			}
		})
	}
}

func TestBoundsStopTheRun(t *testing.T) {
	t.Run("arrival bound", func(t *testing.T) {
		clock := newFakeClock()
		e := &Engine{Now: clock.now, Sleep: clock.sleep, MaxArrivals: 50}
		var arrivals atomic.Int64
		err := e.Run(context.Background(), time.Hour, Stream{Name: "s", Rate: func(time.Duration) float64 { return 1000 },
			Job: func(context.Context, *Client, int64) { arrivals.Add(1) }})
		if !errors.Is(err, ErrTooManyArrivals) || arrivals.Load() != 50 {
			t.Errorf("Run with MaxArrivals 50 = %v after %d arrivals, want ErrTooManyArrivals after 50", err, arrivals.Load())
		}
	})
	t.Run("in-flight bound drops arrivals", func(t *testing.T) {
		release := make(chan struct{})
		clock := newFakeClock()
		e := &Engine{Now: clock.now, Sleep: clock.sleep, MaxInFlight: 3, Recorder: NewRecorder(clock.now)}
		var started atomic.Int64
		done := make(chan error, 1)
		go func() {
			done <- e.Run(context.Background(), time.Second, Stream{Name: "s", Rate: func(time.Duration) float64 { return 10 },
				Job: func(ctx context.Context, c *Client, n int64) { started.Add(1); <-release }})
		}()
		testkit.Eventually(t, 5*time.Second, "7 of 10 arrivals dropped", func() bool {
			return e.Recorder.Second(0).Total().Outcomes[Dropped] == 7
		})
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := started.Load(); got != 3 {
			t.Errorf("jobs started = %d, want the bound, 3", got)
		}
	})
}

// failing answers status with Retry-After: retryAfter (when not "") and counts attempts.
func failing(t *testing.T, status int, retryAfter string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestRetryBehaviours(t *testing.T) {
	tests := []struct {
		name         string
		policy       string
		status       int
		retryAfter   string
		rand         float64
		wantAttempts int64
		wantPauses   []time.Duration
	}{
		{"none: one attempt", PolicyNone, 503, "", 0.5, 1, nil},
		{"naive: three immediate retries", PolicyNaive, 503, "", 0.5, 4, nil},
		{"naive retries 429 too", PolicyNaive, 429, "", 0.5, 4, nil},
		{"no retry of a client error", PolicyNaive, 404, "", 0.5, 1, nil},
		{"backoff: full jitter under a doubling ceiling", PolicyBackoff, 503, "", 0.5,
			4, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}},
		{"backoff ignores Retry-After", PolicyBackoff, 429, "3", 0.25,
			4, []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}},
		{"retry-after: never before the server's time", PolicyRetryAfter, 429, "3", 0.25,
			4, []time.Duration{3250 * time.Millisecond, 3250 * time.Millisecond, 3250 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, attempts := failing(t, tt.status, tt.retryAfter)
			b, err := Policy(tt.policy, 3)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var pauses []time.Duration
			e := &Engine{Rand: func() float64 { return tt.rand }, Sleep: func(_ context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				pauses = append(pauses, d)
				return nil
			}}
			e.defaults()
			c := &Client{e: e, stream: "s", behaviour: b, budget: NewBudget(0, 0)}
			resp := c.Do(context.Background(), get(srv.URL))
			if resp.Status != tt.status {
				t.Errorf("last status = %d, want %d", resp.Status, tt.status)
			}
			if got := attempts.Load(); got != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tt.wantAttempts)
			}
			if len(pauses) != len(tt.wantPauses) {
				t.Fatalf("pauses = %v, want %v", pauses, tt.wantPauses)
			}
			for i := range pauses {
				if pauses[i] != tt.wantPauses[i] {
					t.Errorf("pause %d = %v, want %v", i+1, pauses[i], tt.wantPauses[i])
				}
			}
			sec := e.Recorder.Second(0).Streams["s"]
			if sec.Sent != int(tt.wantAttempts) || sec.Requests != 1 {
				t.Errorf("recorded sent %d, requests %d; want %d attempts of 1 request", sec.Sent, sec.Requests, tt.wantAttempts)
			}
		})
	}
}

func TestFullJitterStaysUnderTheCeiling(t *testing.T) {
	b := Behaviour{Retries: 10, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second, Jitter: true}
	for n := 1; n <= 10; n++ {
		ceiling := min(100*time.Millisecond<<(n-1), time.Second)
		for _, r := range []float64{0, 0.3, 0.999999} {
			got := b.Pause(n, nil, time.Time{}, func() float64 { return r })
			if got < 0 || got >= ceiling+time.Nanosecond {
				t.Errorf("Pause(%d) with rand %v = %v, want in [0, %v)", n, r, got, ceiling)
			}
		}
	}
	if got := (Behaviour{Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}).Pause(3, nil, time.Time{}, nil); got != 400*time.Millisecond {
		t.Errorf("Pause(3) without jitter = %v, want the ceiling 400ms", got)
	}
}

func TestBudgetCapsRetries(t *testing.T) {
	srv, attempts := failing(t, 503, "")
	b, _ := Policy(PolicyNaive, 3)
	b.Budget, b.BudgetReserve = 0.1, 2
	e := &Engine{}
	e.defaults()
	budget := NewBudget(0, 0)
	budget.Set(b.Budget, b.BudgetReserve)
	const requests = 20
	for range requests {
		c := &Client{e: e, stream: "s", behaviour: b, budget: budget}
		c.Do(context.Background(), get(srv.URL))
	}
	// At most the reserve plus a tenth of the requests are retried: 2 + 20×0.1 = 4.
	retries := attempts.Load() - requests
	if retries > 4 || retries < 2 {
		t.Errorf("retries for %d failing requests with a 10%% budget and a reserve of 2 = %d, want 2..4 (without it: %d)", requests, retries, 3*requests)
	}
}

func TestTooManyCountsTheViolatedPolicies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(429)
		_, _ = w.Write([]byte(`{"status":429,"violated-policies":["holds-per-account","api-per-ip"]}`))
	}))
	defer srv.Close()
	e := &Engine{}
	e.defaults()
	c := &Client{e: e, stream: "s", budget: NewBudget(0, 0)}
	c.Do(context.Background(), get(srv.URL))
	got := e.Recorder.Second(0).Counters
	for _, rule := range []string{"holds-per-account", "api-per-ip"} {
		if got["429:"+rule] != 1 {
			t.Errorf("counter 429:%s = %v, want 1", rule, got["429:"+rule])
		}
	}
}

func TestTimeoutIsItsOwnOutcome(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	e := &Engine{Timeout: 50 * time.Millisecond}
	e.defaults()
	c := &Client{e: e, stream: "s", budget: NewBudget(0, 0)}
	if got := c.Do(context.Background(), get(srv.URL)).Outcome; got != Timeout {
		t.Errorf("outcome of an attempt past its timeout = %v, want Timeout (%v)", got, Timeout)
	}
}

func TestFakeIPsAreDistinct(t *testing.T) {
	seen := map[string]int{}
	for n := range 100_000 {
		ip := FakeIP(n)
		if m, dup := seen[ip]; dup {
			t.Fatalf("FakeIP(%d) = FakeIP(%d) = %s, want distinct addresses", n, m, ip)
		}
		seen[ip] = n
	}
	if got := FakeIP(0); got != "10.0.0.1" {
		t.Errorf("FakeIP(0) = %s, want 10.0.0.1", got)
	}
}

func get(url string) func(ctx context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	}
}

// fakeClock advances only when someone sleeps: a sleeper jumps the clock to its wake-up
// time. With one scheduling goroutine that is exact and instant.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.t = c.t.Add(d)
	}
	return ctx.Err()
}
