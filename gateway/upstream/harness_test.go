package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/platform/testkit"
)

// backend is a real HTTP server standing for one service instance. Its readiness and its
// answers are the test's to control; it counts the requests it receives apart from probes.
type backend struct {
	srv      *httptest.Server
	url      string
	ready    atomic.Bool
	slow     atomic.Bool  // /readyz answers only once the prober has given up: it times out
	hits     atomic.Int64 // requests other than probes
	probes   atomic.Int64
	inFlight atomic.Int64
	handle   http.HandlerFunc
}

// newBackend starts a ready backend on 127.0.0.1; h answers its requests (nil: 200 "ok").
func newBackend(t *testing.T, h http.HandlerFunc) *backend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveBackend(t, l, h)
}

// serveBackend is newBackend on a listener the test opened.
func serveBackend(t *testing.T, l net.Listener, h http.HandlerFunc) *backend {
	t.Helper()
	b := &backend{handle: h}
	b.ready.Store(true)
	b.srv = httptest.NewUnstartedServer(b)
	b.srv.Listener.Close()
	b.srv.Listener = l
	b.srv.Start()
	b.url = b.srv.URL
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/readyz" {
		b.probes.Add(1)
		if b.slow.Load() {
			<-r.Context().Done() // the probe's timeout, or the server closing
			return
		}
		if !b.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready")
		return
	}
	b.hits.Add(1)
	b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	if b.handle != nil {
		b.handle(w, r)
		return
	}
	io.WriteString(w, "ok")
}

// hangUp closes the connection without an answer, as a crashing instance would.
func hangUp(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// logBuffer collects what a logger writes; safe for concurrent use.
type logBuffer struct{ testkit.Buffer }

// count returns how many lines hold s.
func (l *logBuffer) count(s string) int {
	n := 0
	for line := range strings.Lines(l.String()) {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// gateway is a real HTTP server whose only handler is Forward to service "svc". Requests
// carrying "X-Retry: 1" may be retried. When maxBody is set, request bodies are capped at
// it with http.MaxBytesReader, as the gateway's max_body_bytes does.
type gateway struct {
	pools   *Pools
	url     string
	reader  *sdkmetric.ManualReader
	ro      RouteOptions
	maxBody int64
}

// startGateway builds Pools for services (o's MeterProvider is set to a manual reader) and
// serves Forward; it runs the pools' probes when run is true.
func startGateway(t *testing.T, services []ServiceConfig, o Options, ro RouteOptions, run bool) *gateway {
	t.Helper()
	g := &gateway{reader: sdkmetric.NewManualReader(), ro: ro}
	o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(g.reader))
	p, err := New(services, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	g.pools = p
	if run {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ro := g.ro
		ro.Retry = r.Header.Get("X-Retry") == "1"
		if g.maxBody > 0 {
			r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
		}
		p.Forward(w, r, "svc", ro)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

// response is what a client saw. err is set when the exchange broke: status is 0 if it
// broke before the response headers.
type response struct {
	status   int
	header   http.Header
	body     string
	err      error
	upstream string
}

// do sends a request through the gateway; retry marks it retryable.
func (g *gateway) do(t *testing.T, method, path string, body io.Reader, retry bool) response {
	t.Helper()
	req, err := http.NewRequest(method, g.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if retry {
		req.Header.Set("X-Retry", "1")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: string(b), err: err, upstream: res.Header.Get(HeaderUpstream)}
}

// metric sums the data points of an int64 counter or gauge that carry attrs.
func (g *gateway) metric(t *testing.T, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := g.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			}
		point:
			for _, dp := range points {
				for _, a := range attrs {
					if v, ok := dp.Attributes.Value(a.Key); !ok || v != a.Value {
						continue point
					}
				}
				total += dp.Value
			}
		}
	}
	return total
}

// service returns the snapshot of service "svc".
func (g *gateway) service(t *testing.T) ServiceStatus {
	t.Helper()
	for _, s := range g.pools.Snapshot() {
		if s.Name == "svc" {
			return s
		}
	}
	t.Fatal("Snapshot() has no service svc")
	return ServiceStatus{}
}

// status returns the snapshot of instance u of service "svc".
func (g *gateway) status(t *testing.T, u string) InstanceStatus {
	t.Helper()
	for _, s := range g.pools.Snapshot() {
		for _, in := range s.Instances {
			if s.Name == "svc" && in.URL == u {
				return in
			}
		}
	}
	t.Fatalf("Snapshot() has no instance %s of svc", u)
	return InstanceStatus{}
}

// first makes the balancer pick the first routable instance when in-flight counts tie.
func first(int) int { return 0 }

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := parseInstance(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
