package upstream

import (
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"boxoffice.dev/platform/testkit"
)

// panicProbe probes every 20ms with a 100ms timeout, and changes state after two results in
// a row.
var panicProbe = ProbeConfig{Interval: 20 * time.Millisecond, Timeout: 100 * time.Millisecond, HealthyAfter: 2, UnhealthyAfter: 2}

// startInstances starts one backend per state: "ready", "not_ready" (/readyz answers 503),
// "slow" (/readyz times out, requests still succeed) or "dead" (listener closed).
func startInstances(t *testing.T, states []string) ([]*backend, []string) {
	t.Helper()
	var bs []*backend
	var urls []string
	for _, st := range states {
		b := newBackend(t, nil)
		switch st {
		case "not_ready":
			b.ready.Store(false)
		case "slow":
			b.slow.Store(true)
		case "dead":
			b.srv.Close()
		}
		bs, urls = append(bs, b), append(urls, b.url)
	}
	return bs, urls
}

// wantReason is the InstanceStatus.Reason the probes give an instance in state st.
var wantReason = map[string]string{"ready": "", "not_ready": "not_ready", "slow": "probe_timeout", "dead": "probe_unreachable"}

// TestPanicMode: when fewer than half of a service's instances are ready, the gateway also
// sends to those whose probes time out, and never to those that answered not ready or
// refused the connection.
func TestPanicMode(t *testing.T) {
	for _, c := range []struct {
		name       string
		states     []string
		threshold  float64
		wantPanic  bool
		wantStatus int
		wantTo     []int // the instances that receive traffic
	}{
		{"one not ready: no traffic, 503", []string{"not_ready"}, 0, false, http.StatusServiceUnavailable, nil},
		{"one slow: panic, and it serves", []string{"slow"}, 0, true, http.StatusOK, []int{0}},
		{"not ready and slow: only the slow one", []string{"not_ready", "slow"}, 0, true, http.StatusOK, []int{1}},
		{"two of three ready: no panic, nothing to the slow one", []string{"ready", "slow", "ready"}, 0, false, http.StatusOK, []int{0, 2}},
		{"dead and slow: only the slow one", []string{"dead", "slow"}, 0, true, http.StatusOK, []int{1}},
		{"dead only: 503", []string{"dead"}, 0, false, http.StatusServiceUnavailable, nil},
		{"panic off: the slow one gets nothing", []string{"slow"}, -1, false, http.StatusServiceUnavailable, nil},
		{"below a threshold of 0.8: ready and slow ones", []string{"ready", "slow"}, 0.8, true, http.StatusOK, []int{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bs, urls := startInstances(t, c.states)
			g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: urls, Probe: panicProbe, PanicThreshold: c.threshold}},
				Options{}, RouteOptions{}, true)
			testkit.Eventually(t, 5*time.Second, "every instance probed", func() bool {
				for i, u := range urls {
					if s := g.status(t, u); s.Reason != wantReason[c.states[i]] || s.Routable != (c.states[i] == "ready") {
						return false
					}
				}
				return true
			})

			for range 40 {
				res := g.do(t, "GET", "/x", nil, true)
				if res.status != c.wantStatus {
					t.Fatalf("GET /x = %d from %q, want %d", res.status, res.upstream, c.wantStatus)
				}
				if res.status == http.StatusOK && !slices.Contains(c.wantTo, slices.Index(urls, res.upstream)) {
					t.Fatalf("GET /x answered by %s, want one of the instances %v", res.upstream, c.wantTo)
				}
			}
			var slowHits int64
			for i, b := range bs {
				if n := b.hits.Load(); (n > 0) != slices.Contains(c.wantTo, i) {
					t.Errorf("instance %d (%s) got %d requests, want some: %v", i, c.states[i], n, slices.Contains(c.wantTo, i))
				}
				if c.states[i] == "slow" {
					slowHits += b.hits.Load()
				}
			}

			if s := g.service(t); s.Panic != c.wantPanic {
				t.Errorf("Snapshot() panic = %v, want %v", s.Panic, c.wantPanic)
			}
			if n := g.metric(t, "upstream.panic", attribute.String("service", "svc")); n != oneIf(c.wantPanic) {
				t.Errorf("upstream.panic = %d, want %d", n, oneIf(c.wantPanic))
			}
			if n := g.metric(t, "upstream.panic.routed"); n != slowHits {
				t.Errorf("upstream.panic.routed = %d, want %d (the slow instances' requests)", n, slowHits)
			}
		})
	}
}

// TestPanicEntersAndLeaves follows one instance whose /readyz turns slow while its requests
// still succeed: the service enters panic and keeps serving, then leaves it once /readyz is
// fast again.
func TestPanicEntersAndLeaves(t *testing.T) {
	b := newBackend(t, nil)
	var logs logBuffer
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}, Probe: panicProbe}},
		Options{Log: slog.New(slog.NewTextHandler(&logs, nil))}, RouteOptions{}, true)
	testkit.Eventually(t, 5*time.Second, "b ready", func() bool { return g.status(t, b.url).Routable })

	b.slow.Store(true)
	testkit.Eventually(t, 5*time.Second, "svc in panic", func() bool { return g.service(t).Panic })
	if s := g.status(t, b.url); s.Ready || s.Reason != "probe_timeout" || !s.PanicRoutable || s.Routable {
		t.Errorf("slow instance = %+v, want not ready for probe_timeout, panic-routable", s)
	}
	for range 20 {
		if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK || res.upstream != b.url {
			t.Fatalf("in panic: %d from %q, want 200 from %s", res.status, res.upstream, b.url)
		}
	}
	if n := g.metric(t, "upstream.panic", attribute.String("service", "svc")); n != 1 {
		t.Errorf("upstream.panic = %d, want 1", n)
	}
	if n := g.metric(t, "upstream.panic.routed", attribute.String("service", "svc")); n != 20 {
		t.Errorf("upstream.panic.routed = %d, want 20", n)
	}
	if n := logs.count("upstream service in panic"); n != 1 {
		t.Errorf("log lines on entering panic = %d, want 1\n%s", n, logs.String())
	}

	b.slow.Store(false)
	testkit.Eventually(t, 5*time.Second, "b ready, svc out of panic", func() bool {
		return g.status(t, b.url).Routable && !g.service(t).Panic
	})
	if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK {
		t.Errorf("after panic: status %d, want 200", res.status)
	}
	if n := g.metric(t, "upstream.panic", attribute.String("service", "svc")); n != 0 {
		t.Errorf("upstream.panic after = %d, want 0", n)
	}
	if n := g.metric(t, "upstream.panic.routed"); n != 20 {
		t.Errorf("upstream.panic.routed after = %d, want still 20", n)
	}
	if n := logs.count("upstream service out of panic"); n != 1 {
		t.Errorf("log lines on leaving panic = %d, want 1", n)
	}
}

// TestPanicDropsAKilledInstance: a slow instance served in panic is killed. Its probes are
// refused, which says dead, not slow: it gets nothing more and the gateway answers 503.
func TestPanicDropsAKilledInstance(t *testing.T) {
	b := newBackend(t, nil)
	b.slow.Store(true)
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}, Probe: panicProbe}}, Options{}, RouteOptions{}, true)
	testkit.Eventually(t, 5*time.Second, "svc in panic", func() bool { return g.service(t).Panic })
	if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusOK {
		t.Fatalf("in panic: status %d, want 200", res.status)
	}

	b.srv.Close()
	testkit.Eventually(t, 5*time.Second, "b probed unreachable", func() bool {
		return g.status(t, b.url).Reason == "probe_unreachable"
	})
	before := g.metric(t, "upstream.requests", attribute.String("instance", b.url))
	for range 10 {
		if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusServiceUnavailable {
			t.Fatalf("killed: status %d from %q, want 503", res.status, res.upstream)
		}
	}
	if n := g.metric(t, "upstream.requests", attribute.String("instance", b.url)) - before; n != 0 {
		t.Errorf("attempts on the killed instance = %d, want 0", n)
	}
	if s := g.service(t); s.Panic || s.Instances[0].PanicRoutable {
		t.Errorf("Snapshot() = %+v, want out of panic, the killed instance not panic-routable", s)
	}
}
