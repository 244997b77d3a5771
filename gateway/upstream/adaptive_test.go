package upstream

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"boxoffice.dev/platform/testkit"
)

func TestAdaptiveLimit(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	const target = 100 * time.Millisecond
	slow, fast := 3*target, target/2
	newLimit := func() *adaptiveLimit {
		return newAdaptiveLimit(AdaptiveConcurrency{LatencyTarget: target, MinInFlight: 2}, 10)
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	// overload answers, at sent + slow, to requests sent one after the other: each sent after
	// the cut the one before caused.
	overload := func(a *adaptiveLimit, n int) {
		for i := range n {
			sent := at(time.Hour + time.Duration(i)*time.Second)
			a.observe(sent, sent.Add(slow), slow, false, 1)
		}
	}

	t.Run("overload cuts a tenth, once per round trip", func(t *testing.T) {
		a := newLimit()
		if got := a.current(); got != 10 {
			t.Fatalf("current() at start = %d, want 10 (MaxInFlight)", got)
		}
		a.observe(at(0), at(slow), slow, false, 10)
		// Requests sent before that cut answer slowly too, or with a 503: the same episode.
		a.observe(at(10*time.Millisecond), at(slow+10*time.Millisecond), slow, false, 10)
		a.observe(at(20*time.Millisecond), at(slow+20*time.Millisecond), fast, true, 10)
		if got := a.current(); got != 9 {
			t.Errorf("after one episode of slow answers, current() = %d, want 9", got)
		}
		a.observe(at(slow+time.Millisecond), at(slow+fast), fast, true, 10) // sent after the cut
		if got := a.current(); got != 8 {                                   // 9 × 0.9 = 8.1
			t.Errorf("after a 503 to a request sent after the cut, current() = %d, want 8", got)
		}
		overload(a, 50)
		if got := a.current(); got != 2 {
			t.Errorf("after 50 more episodes, current() = %d, want 2 (MinInFlight)", got)
		}
	})

	t.Run("good answers of a busy service add one per limit's worth", func(t *testing.T) {
		a := newLimit()
		overload(a, 30)
		for range 3 {
			a.observe(at(0), at(fast), fast, false, 2) // 2 → 2.5 → 2.9 → 3.24
		}
		if got := a.current(); got != 3 {
			t.Errorf("after 3 good answers at the floor, current() = %d, want 3", got)
		}
		for range 200 {
			a.observe(at(0), at(fast), fast, false, 10)
		}
		if got := a.current(); got != 10 {
			t.Errorf("after 200 good answers, current() = %d, want 10 (MaxInFlight)", got)
		}
	})

	t.Run("an idle service does not grow", func(t *testing.T) {
		a := newLimit()
		overload(a, 1) // 9
		for range 100 {
			a.observe(at(0), at(fast), fast, false, 4) // 4 in flight: the limit of 9 holds nothing back
		}
		if got := a.current(); got != 9 {
			t.Errorf("after 100 good answers with 4 in flight, current() = %d, want 9", got)
		}
	})

	t.Run("new bounds keep the limit reached", func(t *testing.T) {
		a := newLimit()
		overload(a, 1) // 9
		a.configure(AdaptiveConcurrency{LatencyTarget: target, MinInFlight: 2}, 5)
		if got := a.current(); got != 5 {
			t.Errorf("after MaxInFlight 10 → 5, current() = %d, want 5", got)
		}
		a.configure(AdaptiveConcurrency{LatencyTarget: target, MinInFlight: 7}, 20)
		if got := a.current(); got != 7 {
			t.Errorf("after MinInFlight 7, MaxInFlight 20, current() = %d, want 7", got)
		}
	})
}

// TestAdaptiveConcurrency runs the limit through Forward: a fake clock stands for time, and
// the backend moves it by the latency the test gives its answers, so that "slow" is exact.
func TestAdaptiveConcurrency(t *testing.T) {
	c := newClock()
	var latency atomic.Int64
	var park atomic.Bool
	release := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if park.Load() {
			<-release
		}
		c.Add(time.Duration(latency.Load()))
		if r.URL.Path == "/broken" {
			hangUp(w, r)
			return
		}
		io.WriteString(w, "ok")
	})
	svc := ServiceConfig{Name: "svc", Instances: []string{b.url}, MaxInFlight: 8, Probe: ProbeConfig{Disabled: true},
		Adaptive: AdaptiveConcurrency{LatencyTarget: 100 * time.Millisecond, MinInFlight: 2}}
	g := startGateway(t, []ServiceConfig{svc}, Options{Clock: c.Now}, RouteOptions{}, false)
	limit := func() int { return g.pools.Snapshot()[0].ConcurrencyLimit }
	if s := g.pools.Snapshot()[0]; s.ConcurrencyLimit != 8 || !s.Adaptive {
		t.Fatalf("at start: concurrencyLimit %d, adaptive %v; want 8, true", s.ConcurrencyLimit, s.Adaptive)
	}

	// An instance that breaks off is ejection's business, however long it took: no cut.
	latency.Store(int64(300 * time.Millisecond))
	for range 2 {
		if res := g.do(t, "GET", "/broken", nil, false); res.status != http.StatusBadGateway {
			t.Fatalf("broken answer: status %d, want 502", res.status)
		}
	}
	if got := limit(); got != 8 {
		t.Errorf("after 2 slow broken answers, concurrency limit = %d, want 8: they say nothing of the load", got)
	}

	for range 20 {
		if res := g.do(t, "GET", "/slow", nil, false); res.status != http.StatusOK {
			t.Fatalf("slow answer: status %d, want 200", res.status)
		}
	}
	if got := limit(); got != 2 {
		t.Errorf("after 20 answers three times slower than the target, concurrency limit = %d, want 2 (the floor)", got)
	}
	if got := g.metric(t, "upstream.concurrency_limit", attribute.String("service", "svc")); got != 2 {
		t.Errorf("upstream.concurrency_limit = %d, want 2", got)
	}

	// At the adapted limit, the third request at once is shed.
	latency.Store(0)
	park.Store(true)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { g.do(t, "GET", "/parked", nil, false) })
	}
	testkit.Eventually(t, 5*time.Second, "2 requests in flight at the upstream", func() bool { return b.inFlight.Load() == 2 })
	if res := g.do(t, "GET", "/one-more", nil, false); res.status != http.StatusServiceUnavailable {
		t.Errorf("a third request with the limit at 2: status %d, want 503", res.status)
	}
	park.Store(false)
	close(release)
	wg.Wait()

	// New knobs keep the limit reached; turning adaptation off brings MaxInFlight back.
	svc.MaxInFlight = 6
	if err := g.pools.Update([]ServiceConfig{svc}); err != nil {
		t.Fatal(err)
	}
	if got := limit(); got > 3 {
		t.Errorf("after an Update of MaxInFlight, concurrency limit = %d, want what it had reached (2 or 3), not the new ceiling", got)
	}
	svc.Adaptive = AdaptiveConcurrency{}
	if err := g.pools.Update([]ServiceConfig{svc}); err != nil {
		t.Fatal(err)
	}
	if s := g.pools.Snapshot()[0]; s.ConcurrencyLimit != 6 || s.Adaptive {
		t.Errorf("adaptation off: concurrencyLimit %d, adaptive %v; want 6, false", s.ConcurrencyLimit, s.Adaptive)
	}
}

func TestAdaptiveConcurrencyValidation(t *testing.T) {
	base := ServiceConfig{Name: "svc", Instances: []string{"http://127.0.0.1:9"}, MaxInFlight: 10}
	tests := []struct {
		name     string
		adaptive AdaptiveConcurrency
		max      int
		wantErr  bool
	}{
		{"off", AdaptiveConcurrency{}, 0, false},
		{"on", AdaptiveConcurrency{LatencyTarget: time.Second, MinInFlight: 10}, 10, false},
		{"without a ceiling", AdaptiveConcurrency{LatencyTarget: time.Second}, 0, true},
		{"floor above the ceiling", AdaptiveConcurrency{LatencyTarget: time.Second, MinInFlight: 11}, 10, true},
		{"negative target", AdaptiveConcurrency{LatencyTarget: -time.Second}, 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.Adaptive, s.MaxInFlight = tt.adaptive, tt.max
			if err := s.validate(); (err != nil) != tt.wantErr {
				t.Errorf("validate(%+v, maxInFlight %d) = %v, want error %v", tt.adaptive, tt.max, err, tt.wantErr)
			}
		})
	}
}

// TestAdaptiveConcurrencyClientGiveUps: a client that gives up says something of the service
// only when it waited longer than the target. A service slower than its clients' patience
// must cut its limit even though no answer ever reaches the response timeout.
func TestAdaptiveConcurrencyClientGiveUps(t *testing.T) {
	c := newClock()
	var latency atomic.Int64
	arrived := make(chan struct{}, 1)
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		c.Add(time.Duration(latency.Load()))
		arrived <- struct{}{}
		<-r.Context().Done() // never answers: the client gives up first
	})
	svc := ServiceConfig{Name: "svc", Instances: []string{b.url}, MaxInFlight: 8, Probe: ProbeConfig{Disabled: true},
		Adaptive: AdaptiveConcurrency{LatencyTarget: 100 * time.Millisecond}}
	g := startGateway(t, []ServiceConfig{svc}, Options{Clock: c.Now}, RouteOptions{}, false)
	giveUp := func(after time.Duration) {
		t.Helper()
		latency.Store(int64(after))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-arrived // the service has taken its time: now the client gives up
			cancel()
		}()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/hang", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			t.Fatalf("GET /hang answered %d, want the client to give up", res.StatusCode)
		}
		// The limit has seen the attempt once the gateway no longer counts it in flight.
		testkit.Eventually(t, 5*time.Second, "the given-up request gone from the gateway", func() bool { return g.pools.Snapshot()[0].InFlight == 0 })
	}

	giveUp(50 * time.Millisecond)
	if got := g.pools.Snapshot()[0].ConcurrencyLimit; got != 8 {
		t.Errorf("after a client gave up within the target, concurrency limit = %d, want 8", got)
	}
	giveUp(300 * time.Millisecond)
	if got := g.pools.Snapshot()[0].ConcurrencyLimit; got != 7 {
		t.Errorf("after a client gave up past the target, concurrency limit = %d, want 7", got)
	}
}

func TestDialFailed(t *testing.T) {
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connect timeout, wrapped", fmt.Errorf("proxy: %w", timeout), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: context.DeadlineExceeded}, false},
		{"response timeout", errResponseTimeout, false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dialFailed(tt.err); got != tt.want {
				t.Errorf("dialFailed(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
