package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/testkit"
)

// ok answers 200 "ok"; the service behind the hook.
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

func mustSet(t *testing.T, h *control.Hook, k control.Knobs) {
	t.Helper()
	if err := h.Set(k); err != nil {
		t.Fatalf("Set(%+v): %v", k, err)
	}
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func connect(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect nats: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestPublishReachesEveryReplica(t *testing.T) {
	srv := testkit.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Two replicas of inventory, each on its own connection as separate processes are,
	// and one replica of another service that must not change. payment's log is the
	// record of every knob change it applied.
	var paymentLog testkit.Buffer
	replicas := []*control.Hook{control.New("inventory"), control.New("inventory")}
	other := control.New("payment", control.Options{Log: slog.New(slog.NewJSONHandler(&paymentLog, nil))})
	for _, h := range append(replicas, other) {
		stop, err := h.Subscribe(ctx, connect(t, srv.ClientURL()))
		if err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		t.Cleanup(stop)
	}

	pub := connect(t, srv.ClientURL())
	want := control.Knobs{MaxConcurrent: 3, ServiceTime: 40 * time.Millisecond, Latency: 5 * time.Millisecond}
	if err := control.Publish(ctx, pub, "inventory", want); err != nil {
		t.Fatalf("Publish(inventory): %v", err)
	}
	for i, h := range replicas {
		testkit.Eventually(t, 5*time.Second, "replica knobs updated", func() bool { return h.Knobs() == want })
		if got := h.Knobs(); got != want {
			t.Errorf("replica %d Knobs() = %+v, want %+v", i, got, want)
		}
	}

	// Seeing payment unchanged now would prove nothing: a stray delivery may still be in
	// flight. NATS keeps one connection's messages in order to each subscriber, and a
	// subscription handles them one at a time, so once payment has applied a later message
	// of its own, anything inventory's publish sent it has been applied, and logged, too.
	own := control.Knobs{Latency: 7 * time.Millisecond}
	if err := control.Publish(ctx, pub, "payment", own); err != nil {
		t.Fatalf("Publish(payment): %v", err)
	}
	testkit.Eventually(t, 5*time.Second, "payment applies its own knobs", func() bool {
		return slices.Contains(appliedKnobs(t, paymentLog.String()), own)
	})
	if got := appliedKnobs(t, paymentLog.String()); !slices.Equal(got, []control.Knobs{own}) {
		t.Errorf("payment applied %+v, want only its own %+v", got, own)
	}
}

// appliedKnobs returns, in order, the knobs of every "set over nats" record in a Hook's
// JSON log.
func appliedKnobs(t *testing.T, log string) []control.Knobs {
	t.Helper()
	var applied []control.Knobs
	for line := range strings.Lines(log) {
		var rec struct {
			Msg   string        `json:"msg"`
			Knobs control.Knobs `json:"knobs"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Msg == "control knobs set over nats" {
			applied = append(applied, rec.Knobs)
		}
	}
	return applied
}

// gate is an injected Sleep that holds every request in its slot until opened, and
// records how many requests were inside a slot at once.
type gate struct {
	once    sync.Once
	open    chan struct{}
	active  atomic.Int64
	maxSeen atomic.Int64
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

// release lets every held request finish. Deferred after the server's Close, so a test
// that fails while requests are held still ends.
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) sleep(ctx context.Context, _ time.Duration) error {
	n := g.active.Add(1)
	for {
		m := g.maxSeen.Load()
		if n <= m || g.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		g.active.Add(-1)
		return ctx.Err()
	}
}

// leave wraps the service so a request leaves the slot count as it finishes.
func (g *gate) leave(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer g.active.Add(-1)
		next.ServeHTTP(w, r)
	})
}

func TestMaxConcurrentQueuesTheRest(t *testing.T) {
	g := newGate()
	h := control.New("inventory", control.Options{Sleep: g.sleep})
	mustSet(t, h, control.Knobs{MaxConcurrent: 2, ServiceTime: time.Second})
	srv := httptest.NewServer(h.Middleware(g.leave(ok)))
	defer srv.Close()
	defer g.release()

	const requests = 10
	statuses := make(chan int, requests)
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/v1/holds")
			if err != nil {
				t.Errorf("GET: %v", err)
				statuses <- 0
				return
			}
			_ = resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	testkit.Eventually(t, 5*time.Second, "2 in flight and 8 queued", func() bool {
		return h.InFlight() == 2 && h.Queued() == requests-2 && g.active.Load() == 2
	})

	// More capacity applies to requests already waiting, as adding servers would.
	mustSet(t, h, control.Knobs{MaxConcurrent: 4, ServiceTime: time.Second})
	// maxSeen is raised just after active, by the same request: wait for both.
	testkit.Eventually(t, 5*time.Second, "4 in flight after raising capacity", func() bool {
		return h.InFlight() == 4 && h.Queued() == requests-4 && g.active.Load() == 4 && g.maxSeen.Load() == 4
	})

	g.release()
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusOK {
			t.Errorf("status = %d, want 200 (queued requests are served, not refused)", s)
		}
	}
	if got := g.maxSeen.Load(); got > 4 {
		t.Errorf("max requests in a slot = %d, want at most 4", got)
	}
	if in, q := h.InFlight(), h.Queued(); in != 0 || q != 0 {
		t.Errorf("after all requests: InFlight() = %d, Queued() = %d, want 0, 0", in, q)
	}
}

func TestMaxConcurrentWithRealServiceTime(t *testing.T) {
	var active, maxSeen atomic.Int64
	h := control.New("inventory")
	mustSet(t, h, control.Knobs{MaxConcurrent: 2, ServiceTime: 20 * time.Millisecond})
	srv := httptest.NewServer(h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := active.Add(1)
		defer active.Add(-1)
		for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
		}
		if got := h.InFlight(); got > 2 {
			t.Errorf("InFlight() = %d inside the handler, want at most 2", got)
		}
		time.Sleep(5 * time.Millisecond) // the handler's own work, inside the slot
	})))
	defer srv.Close()

	var wg sync.WaitGroup
	start := time.Now()
	for range 10 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Errorf("GET: %v", err)
				return
			}
			_ = resp.Body.Close()
		})
	}
	wg.Wait()
	if got := maxSeen.Load(); got > 2 {
		t.Errorf("max concurrent handlers = %d, want at most 2", got)
	}
	// 10 requests through 2 slots of >= 25ms each take at least 5 rounds.
	if elapsed := time.Since(start); elapsed < 125*time.Millisecond {
		t.Errorf("10 requests took %v, want at least 125ms at a capacity of 2 × 25ms", elapsed)
	}
}

// sequence is an injected random source returning 0, 1/n, 2/n, … in turn.
type sequence struct {
	mu   sync.Mutex
	i, n int
}

func (s *sequence) next() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := float64(s.i%s.n) / float64(s.n)
	s.i++
	return v
}

func TestErrorRateIsExactWithInjectedRandomness(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		want int
	}{
		{name: "none", rate: 0, want: 0},
		{name: "a quarter", rate: 0.25, want: 25},
		{name: "most", rate: 0.9, want: 90},
		{name: "all", rate: 1, want: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := control.New("payment", control.Options{Rand: (&sequence{n: 100}).next})
			mustSet(t, h, control.Knobs{ErrorRate: tt.rate})
			srv := httptest.NewServer(h.Middleware(ok))
			defer srv.Close()
			got := 0
			for range 100 {
				resp := get(t, srv.URL+"/v1/charges")
				if resp.StatusCode == http.StatusServiceUnavailable {
					got++
				}
			}
			if got != tt.want {
				t.Errorf("503s at error_rate %v over 100 requests = %d, want %d", tt.rate, got, tt.want)
			}
		})
	}
}

func TestOutageAnswersProblem503(t *testing.T) {
	h := control.New("catalog")
	mustSet(t, h, control.Knobs{Outage: true})
	mux := http.NewServeMux()
	mux.Handle("/", ok)
	mux.Handle(control.Path, h.Handler())
	srv := httptest.NewServer(h.Middleware(mux))
	defer srv.Close()

	resp := get(t, srv.URL+"/v1/events")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET /v1/events status = %d, want 503", resp.StatusCode)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", got)
	}
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	var body struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("decode problem body: %v", err)
	}
	if body.Type != "about:blank" || body.Title != "Service Unavailable" || body.Status != 503 || !strings.Contains(body.Detail, "outage") {
		t.Errorf("problem body = %+v, want about:blank, Service Unavailable, 503, a detail naming the outage", body)
	}

	// Probes, metrics and the control endpoint stay reachable: the playground must be able
	// to end the outage it started.
	for _, path := range []string{"/healthz", "/readyz", "/metrics", control.Path} {
		t.Run(path, func(t *testing.T) {
			if got := get(t, srv.URL+path).StatusCode; got != http.StatusOK {
				t.Errorf("GET %s during an outage = %d, want 200", path, got)
			}
		})
	}
}

func TestValidationNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		k     control.Knobs
		field string
	}{
		{name: "negative latency", k: control.Knobs{Latency: -time.Millisecond}, field: "latency_ms"},
		{name: "error rate above one", k: control.Knobs{ErrorRate: 1.5}, field: "error_rate"},
		{name: "negative error rate", k: control.Knobs{ErrorRate: -0.1}, field: "error_rate"},
		{name: "negative max concurrent", k: control.Knobs{MaxConcurrent: -1}, field: "max_concurrent"},
		{name: "negative service time", k: control.Knobs{ServiceTime: -time.Second}, field: "service_time_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := control.New("order")
			err := h.Set(tt.k)
			perr, ok := errors.AsType[*problem.Error](err)
			if !ok || perr.Field != tt.field || perr.Code != problem.Invalid {
				t.Fatalf("Set(%+v) = %v, want an invalid-field error naming %s", tt.k, err, tt.field)
			}
			if got := h.Knobs(); got != (control.Knobs{}) {
				t.Errorf("Knobs() after a rejected Set = %+v, want unchanged zero knobs", got)
			}
			if err := control.Publish(context.Background(), nil, "order", tt.k); err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("Publish(%+v) = %v, want an error naming %s before anything is sent", tt.k, err, tt.field)
			}
		})
	}
}

func TestHandlerGetAndPut(t *testing.T) {
	h := control.New("search")
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	put := func(body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("PUT: %v", err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}

	resp := put(`{"latency_ms": 12.5, "error_rate": 0.1, "outage": false, "max_concurrent": 8, "service_time_ms": 30}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT valid knobs = %d, want 200", resp.StatusCode)
	}
	want := control.Knobs{Latency: 12500 * time.Microsecond, ErrorRate: 0.1, MaxConcurrent: 8, ServiceTime: 30 * time.Millisecond}
	if got := h.Knobs(); got != want {
		t.Errorf("Knobs() after PUT = %+v, want %+v", got, want)
	}
	var got map[string]any
	if err := json.NewDecoder(get(t, srv.URL).Body).Decode(&got); err != nil {
		t.Fatalf("decode GET: %v", err)
	}
	if got["latency_ms"] != 12.5 || got["service_time_ms"] != 30.0 || got["max_concurrent"] != 8.0 || got["error_rate"] != 0.1 {
		t.Errorf("GET knobs = %v, want the millisecond form of %+v", got, want)
	}

	tests := []struct {
		name, body, field string
	}{
		{name: "out of range", body: `{"error_rate": 2}`, field: "error_rate"},
		{name: "negative", body: `{"service_time_ms": -5}`, field: "service_time_ms"},
		{name: "wrong type", body: `{"max_concurrent": "lots"}`, field: "max_concurrent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := put(tt.body)
			var p problem.Details
			_ = json.NewDecoder(resp.Body).Decode(&p)
			if resp.StatusCode != http.StatusBadRequest || p.Field != tt.field {
				t.Errorf("PUT %s = %d field %q, want 400 field %q", tt.body, resp.StatusCode, p.Field, tt.field)
			}
			if got := h.Knobs(); got != want {
				t.Errorf("Knobs() after a rejected PUT = %+v, want unchanged %+v", got, want)
			}
		})
	}
}

func TestUnaryInterceptor(t *testing.T) {
	g := newGate()
	h := control.New("inventory", control.Options{Sleep: g.sleep})
	defer g.release()
	intercept := h.UnaryServerInterceptor()
	handler := func(context.Context, any) (any, error) { return "done", nil }
	call := func(ctx context.Context, method string) error {
		_, err := intercept(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, handler)
		return err
	}
	ctx := context.Background()

	mustSet(t, h, control.Knobs{Outage: true})
	if err := call(ctx, "/boxoffice.inventory.v1.Inventory/Hold"); status.Code(err) != codes.Unavailable {
		t.Errorf("Hold during an outage = %v, want Unavailable", err)
	}
	if err := call(ctx, "/grpc.health.v1.Health/Check"); err != nil {
		t.Errorf("health Check during an outage = %v, want nil", err)
	}

	// One slot, held: a second call waits in line until its deadline.
	mustSet(t, h, control.Knobs{MaxConcurrent: 1, ServiceTime: time.Second})
	held := make(chan error, 1)
	go func() { held <- call(ctx, "/boxoffice.inventory.v1.Inventory/Hold") }()
	testkit.Eventually(t, 5*time.Second, "one call in its slot", func() bool { return h.InFlight() == 1 })
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := call(short, "/boxoffice.inventory.v1.Inventory/Hold"); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("queued call past its deadline = %v, want DeadlineExceeded", err)
	}
	if q := h.Queued(); q != 0 {
		t.Errorf("Queued() after the waiter gave up = %d, want 0", q)
	}
	g.release()
	if err := <-held; err != nil {
		t.Errorf("call holding the slot = %v, want nil", err)
	}
}

func TestMetrics(t *testing.T) {
	reader := metric.NewManualReader()
	g := newGate()
	h := control.New("payment", control.Options{
		MeterProvider: metric.NewMeterProvider(metric.WithReader(reader)),
		Sleep:         g.sleep,
	})
	srv := httptest.NewServer(h.Middleware(g.leave(ok)))
	defer srv.Close()
	defer g.release()

	mustSet(t, h, control.Knobs{Outage: true})
	for range 3 {
		get(t, srv.URL)
	}
	mustSet(t, h, control.Knobs{MaxConcurrent: 1, ServiceTime: time.Second})
	done := make(chan struct{}, 2)
	for range 2 {
		go func() {
			if resp, err := http.Get(srv.URL); err == nil {
				_ = resp.Body.Close()
			}
			done <- struct{}{}
		}()
	}
	testkit.Eventually(t, 5*time.Second, "1 in flight, 1 queued", func() bool { return h.InFlight() == 1 && h.Queued() == 1 })

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	want := map[string]int64{
		"boxoffice.control.injected_errors": 3,
		"boxoffice.control.in_flight":       1,
		"boxoffice.control.queued":          1,
		"boxoffice.control.max_concurrent":  1,
	}
	for name, w := range want {
		if got, found := value(rm, name); !found || got != w {
			t.Errorf("metric %s = %d (found %v), want %d", name, got, found, w)
		}
	}
	g.release()
	<-done
	<-done
}

// value is the first data point of the named int64 sum or gauge.
func value(rm metricdata.ResourceMetrics, name string) (int64, bool) {
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
			if len(points) > 0 {
				return points[0].Value, true
			}
		}
	}
	return 0, false
}
