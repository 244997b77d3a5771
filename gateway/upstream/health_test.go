package upstream

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"boxoffice.dev/platform/testkit"
)

// fastProbe probes every 20ms and changes state after two results in a row.
var fastProbe = ProbeConfig{Interval: 20 * time.Millisecond, Timeout: 500 * time.Millisecond, HealthyAfter: 2, UnhealthyAfter: 2}

func TestNotReadyInstanceGetsNoTraffic(t *testing.T) {
	a, b := newBackend(t, nil), newBackend(t, nil)
	a.ready.Store(false)
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{a.url, b.url}, Probe: fastProbe}}, Options{}, RouteOptions{}, true)

	testkit.Eventually(t, 5*time.Second, "b probed ready", func() bool { return g.status(t, b.url).Ready })
	if s := g.status(t, a.url); s.Ready || s.Probe != "not_ready" && s.Probe != "pending" {
		t.Fatalf("a = %+v, want not ready", s)
	}
	for range 50 {
		if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK || res.upstream != b.url {
			t.Fatalf("request: %d from %q, want 200 from %s", res.status, res.upstream, b.url)
		}
	}
	if n := a.hits.Load(); n != 0 {
		t.Errorf("requests to the not-ready instance = %d, want 0", n)
	}

	// The two swap: b turns not ready, a ready. Once the probes have seen it, b gets nothing.
	a.ready.Store(true)
	b.ready.Store(false)
	testkit.Eventually(t, 5*time.Second, "a ready and b not ready", func() bool {
		return g.status(t, a.url).Ready && !g.status(t, b.url).Ready
	})
	if s := g.status(t, b.url); s.Probe != "not_ready" || s.ProbeError != "probe: status 503" || s.Routable {
		t.Errorf("b = %+v, want not_ready with the probe's error, not routable", s)
	}
	before := b.hits.Load()
	for range 50 {
		if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK || res.upstream != a.url {
			t.Fatalf("request: %d from %q, want 200 from %s", res.status, res.upstream, a.url)
		}
	}
	if n := b.hits.Load() - before; n != 0 {
		t.Errorf("requests to the not-ready instance = %d, want 0", n)
	}
	if n := g.metric(t, "upstream.routable", attribute.String("instance", a.url)); n != 1 {
		t.Errorf("upstream.routable{a} = %d, want 1", n)
	}

	// None ready: 503, and still no traffic.
	a.ready.Store(false)
	testkit.Eventually(t, 5*time.Second, "a not ready", func() bool { return !g.status(t, a.url).Ready })
	if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusServiceUnavailable {
		t.Errorf("no ready instance: status %d, want 503", res.status)
	}
}

// TestKilledInstanceIsEjected kills one of two instances. Probes are too slow to notice, so
// the first requests to reach it fail, are retried on the other, and eject it; from then on no
// request goes to it. When its ejection ends and it fails again, it is ejected for twice as
// long.
func TestKilledInstanceIsEjected(t *testing.T) {
	a, b := newBackend(t, nil), newBackend(t, nil)
	clk := newClock()
	slowProbe := ProbeConfig{Interval: time.Hour, Timeout: time.Second}
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{a.url, b.url}, Probe: slowProbe, EjectAfter: 2, EjectFor: 10 * time.Second}},
		Options{Clock: clk.Now}, RouteOptions{}, true)
	testkit.Eventually(t, 5*time.Second, "both probed ready", func() bool { return g.status(t, a.url).Ready && g.status(t, b.url).Ready })

	a.srv.Close()
	for i := range 100 {
		if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK {
			t.Fatalf("idempotent request %d: status %d, want 200 (retried on the live instance)", i, res.status)
		}
	}
	s := g.status(t, a.url)
	if !s.Ejected || !s.EjectedUntil.Equal(clk.Now().Add(10*time.Second)) || s.Routable {
		t.Fatalf("killed instance = %+v, want ejected for 10s", s)
	}
	if n := g.metric(t, "upstream.retries", attribute.String("outcome", "sent")); n != 2 {
		t.Errorf("retries = %d, want 2: two failures eject it, then nothing goes to it", n)
	}
	if n := g.metric(t, "upstream.requests", attribute.String("instance", a.url), attribute.String("outcome", "connect_error")); n != 2 {
		t.Errorf("attempts on the killed instance = %d, want 2", n)
	}
	if n := g.metric(t, "upstream.ejections"); n != 1 {
		t.Errorf("upstream.ejections = %d, want 1", n)
	}

	// Back after 10s, still dead: two more failures, ejected for 20s.
	clk.Add(10 * time.Second)
	for i := range 100 {
		if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK {
			t.Fatalf("idempotent request %d after the ejection: status %d, want 200", i, res.status)
		}
	}
	if s := g.status(t, a.url); !s.EjectedUntil.Equal(clk.Now().Add(20 * time.Second)) {
		t.Errorf("second ejection until %v, want %v (twice as long)", s.EjectedUntil, clk.Now().Add(20*time.Second))
	}
	if n := g.metric(t, "upstream.retries", attribute.String("outcome", "sent")); n != 4 {
		t.Errorf("retries = %d, want 4", n)
	}
}

func TestObserveProbe(t *testing.T) {
	const P, N, T, U = resultPassed, resultNotReady, resultTimeout, resultUnreachable
	pr := ProbeConfig{HealthyAfter: 2, UnhealthyAfter: 3}
	for _, c := range []struct {
		name    string
		results []probeResult
		want    []string // "ready", or the reason it is out, after each result
	}{
		{"first pass decides", []probeResult{P}, []string{"ready"}},
		{"first failure decides", []probeResult{N}, []string{"not_ready"}},
		{"first timeout decides", []probeResult{T}, []string{"probe_timeout"}},
		{"first refused connection decides", []probeResult{U}, []string{"probe_unreachable"}},
		{"ready needs 3 failures in a row", []probeResult{P, N, N, P, N, N, N}, []string{"ready", "ready", "ready", "ready", "ready", "ready", "not_ready"}},
		{"not ready needs 2 passes in a row", []probeResult{N, P, N, P, P}, []string{"not_ready", "not_ready", "not_ready", "not_ready", "ready"}},
		{"3 timeouts in a row: slow", []probeResult{P, T, T, T}, []string{"ready", "ready", "ready", "probe_timeout"}},
		{"a not-ready answer last decides", []probeResult{P, T, T, N}, []string{"ready", "ready", "ready", "not_ready"}},
		{"a not-ready answer before timeouts decides", []probeResult{P, N, T, T}, []string{"ready", "ready", "ready", "not_ready"}},
		{"3 timeouts in a row overturn a not-ready answer", []probeResult{N, T, T, T}, []string{"not_ready", "not_ready", "not_ready", "probe_timeout"}},
		{"a refused connection takes a slow one out at once", []probeResult{T, U}, []string{"probe_timeout", "probe_unreachable"}},
		{"a pass while out keeps the reason", []probeResult{N, P, T}, []string{"not_ready", "not_ready", "not_ready"}},
		{"slow, then ready after 2 passes", []probeResult{T, P, P}, []string{"probe_timeout", "probe_timeout", "ready"}},
		{"ready again, timeouts count afresh", []probeResult{N, P, P, T, T, T}, []string{"not_ready", "not_ready", "ready", "ready", "ready", "probe_timeout"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := newInstance("svc", mustURL(t, "http://127.0.0.1:1"), true)
			for i, r := range c.results {
				in.observeProbe(r, nil, pr)
				s := in.status(time.Now())
				got := s.Reason
				if s.Ready {
					got = "ready"
				}
				wantProbe := "not_ready"
				if c.want[i] == "ready" {
					wantProbe = "ready"
				}
				if got != c.want[i] || s.Probe != wantProbe || s.PanicRoutable != (c.want[i] == "probe_timeout") {
					t.Fatalf("after result %d (%v): %s, probe %s, panic-routable %v; want %s", i, r.reason(), got, s.Probe, s.PanicRoutable, c.want[i])
				}
			}
		})
	}
}

func TestProbeFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want probeResult
	}{
		{"the probe's deadline", fmt.Errorf("probe: %w", context.DeadlineExceeded), resultTimeout},
		{"a connect that timed out", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}, resultTimeout},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, resultUnreachable},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, resultUnreachable},
		{"closed before the answer", io.ErrUnexpectedEOF, resultUnreachable},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := probeFailure(c.err); got != c.want {
				t.Errorf("probeFailure(%v) = %s, want %s", c.err, got.reason(), c.want.reason())
			}
		})
	}
}

// timeoutError is a net.Error that timed out, as a dialer's i/o timeout is.
type timeoutError struct{}

var _ net.Error = timeoutError{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestProbesSwitchedOnAndOff: without probes an instance is ready at once, whatever its
// /readyz says; switched on by an Update, the probes take it out.
func TestProbesSwitchedOnAndOff(t *testing.T) {
	a := newBackend(t, nil)
	a.ready.Store(false)
	off := ProbeConfig{Disabled: true}
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{a.url}, Probe: off}}, Options{}, RouteOptions{}, true)

	if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK {
		t.Fatalf("probes off: status %d, want 200", res.status)
	}
	if s := g.status(t, a.url); s.Probe != "disabled" || a.probes.Load() != 0 {
		t.Errorf("probes off: probe %q after %d probes, want disabled and none", s.Probe, a.probes.Load())
	}

	if err := g.pools.Update([]ServiceConfig{{Name: "svc", Instances: []string{a.url}, Probe: fastProbe}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "a probed not ready", func() bool { return !g.status(t, a.url).Ready })
	before := a.hits.Load()
	if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusServiceUnavailable {
		t.Errorf("probes on, a not ready: status %d, want 503", res.status)
	}
	if n := a.hits.Load() - before; n != 0 {
		t.Errorf("requests to a once probed not ready = %d, want 0", n)
	}
}
