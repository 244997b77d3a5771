package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"boxoffice.dev/platform/testkit"
)

func TestForwardPassesRequestAndResponse(t *testing.T) {
	var got *http.Request
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		w.Header().Set("X-Answer", "42")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "created "+r.URL.RequestURI())
	})
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}, Probe: ProbeConfig{Disabled: true}}},
		Options{TracerProvider: tp}, RouteOptions{}, false)

	req, _ := http.NewRequest(http.MethodGet, g.url+"/v1/events/7?lang=fr", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("Connection", "X-Secret")
	req.Header.Set("X-Secret", "hop-by-hop")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()

	for _, c := range []struct{ what, got, want string }{
		{"status", fmt.Sprint(res.StatusCode), "201"},
		{"body", string(body), "created /v1/events/7?lang=fr"},
		{"response X-Answer", res.Header.Get("X-Answer"), "42"},
		{"response " + HeaderUpstream, res.Header.Get(HeaderUpstream), b.url},
		{"upstream X-Forwarded-For", got.Header.Get("X-Forwarded-For"), "203.0.113.9, 127.0.0.1"},
		{"upstream X-Secret (named in Connection)", got.Header.Get("X-Secret"), ""},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	ended := spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("spans ended = %d, want 1 upstream span", len(ended))
	}
	attrs := attribute.NewSet(ended[0].Attributes()...)
	if v, _ := attrs.Value("boxoffice.upstream.instance"); v.AsString() != b.url {
		t.Errorf("span attribute boxoffice.upstream.instance = %q, want %s", v.AsString(), b.url)
	}
	if v, _ := attrs.Value("http.response.status_code"); v.AsInt64() != 201 {
		t.Errorf("span attribute http.response.status_code = %d, want 201", v.AsInt64())
	}
	sc := ended[0].SpanContext()
	if want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()); got.Header.Get("Traceparent") != want {
		t.Errorf("upstream traceparent = %q, want the attempt span's %q", got.Header.Get("Traceparent"), want)
	}
	if n := g.metric(t, "upstream.requests", attribute.String("instance", b.url), attribute.String("outcome", "2xx")); n != 1 {
		t.Errorf("upstream.requests{2xx} = %d, want 1", n)
	}
}

func TestForwardStreams(t *testing.T) {
	release := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		http.NewResponseController(w).Flush()
		<-release
		io.WriteString(w, "second\n")
	})
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}, Probe: ProbeConfig{Disabled: true}}},
		Options{}, RouteOptions{ResponseTimeout: time.Second}, false)

	res, err := http.Get(g.url + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	line, err := rd.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line = %q, %v; want it before the upstream finishes", line, err)
	}
	close(release)
	line, err = rd.ReadString('\n')
	if err != nil || line != "second\n" {
		t.Errorf("second line = %q, %v; want %q", line, err, "second\n")
	}
}

// TestRetry shows when a request is tried again on the other instance: only after a
// connection failure or a timeout, only for retryable requests, never once the upstream has
// started answering. The balancer always tries instance a first.
func TestRetry(t *testing.T) {
	partial := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, "half")
		http.NewResponseController(w).Flush()
		hangUp(w, r)
	}
	partialStream := func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "half")
		http.NewResponseController(w).Flush()
		hangUp(w, r)
	}
	slow := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	fail := func(w http.ResponseWriter, r *http.Request) { http.Error(w, "broken", http.StatusInternalServerError) }
	for _, c := range []struct {
		name       string
		a          http.HandlerFunc // nil: a is stopped before the request
		method     string
		body       string
		chunked    bool // the body's length is not known in advance
		retry      bool
		wantStatus int
		wantBody   string
		wantBHits  int64
		wantCut    bool // the client sees the body cut short
	}{
		{name: "refused, retryable", method: "GET", retry: true, wantStatus: 200, wantBody: "b got ", wantBHits: 1},
		{name: "refused, not retryable", method: "POST", wantStatus: 502, wantBHits: 0},
		{name: "hang-up, retryable with body", a: hangUp, method: "PUT", body: "seat 12", retry: true, wantStatus: 200, wantBody: "b got seat 12", wantBHits: 1},
		{name: "hang-up, retryable with a chunked body", a: hangUp, method: "POST", body: "seat 13", chunked: true, retry: true, wantStatus: 200, wantBody: "b got seat 13", wantBHits: 1},
		{name: "hang-up, not retryable", a: hangUp, method: "PUT", body: "seat 12", wantStatus: 502, wantBHits: 0},
		{name: "timeout, retryable", a: slow, method: "GET", retry: true, wantStatus: 200, wantBody: "b got ", wantBHits: 1},
		{name: "timeout, not retryable", a: slow, method: "GET", wantStatus: 504, wantBHits: 0},
		{name: "answered 500", a: fail, method: "GET", retry: true, wantStatus: 500, wantBody: "broken\n", wantBHits: 0},
		// The headers were still in the gateway's buffer when the body broke: the client sees
		// the connection drop, never a second answer.
		{name: "broke off its body", a: partial, method: "GET", retry: true, wantStatus: 0, wantBHits: 0, wantCut: true},
		{name: "broke off a streamed body", a: partialStream, method: "GET", retry: true, wantStatus: 200, wantBody: "half", wantBHits: 0, wantCut: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newBackend(t, c.a)
			b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				io.WriteString(w, "b got "+string(body))
			})
			if c.a == nil {
				a.srv.Close()
			}
			g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{a.url, b.url}, Probe: ProbeConfig{Disabled: true}}},
				Options{Rand: first}, RouteOptions{ResponseTimeout: 100 * time.Millisecond}, false)

			var body io.Reader = strings.NewReader(c.body)
			if c.chunked {
				body = struct{ io.Reader }{body} // hides the length from the client
			}
			res := g.do(t, c.method, "/x", body, c.retry)
			if res.status != c.wantStatus {
				t.Errorf("status = %d, want %d (body %q)", res.status, c.wantStatus, res.body)
			}
			if c.wantBody != "" && res.body != c.wantBody {
				t.Errorf("body = %q, want %q", res.body, c.wantBody)
			}
			if (res.err != nil) != c.wantCut {
				t.Errorf("exchange error: %v, want broken %v", res.err, c.wantCut)
			}
			if n := b.hits.Load(); n != c.wantBHits {
				t.Errorf("requests to the other instance = %d, want %d", n, c.wantBHits)
			}
			if c.wantStatus >= 502 {
				var d struct {
					Status int    `json:"status"`
					Code   string `json:"code"`
				}
				if err := json.Unmarshal([]byte(res.body), &d); err != nil || d.Status != c.wantStatus || res.header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("body = %q (%s), want a problem+json with status %d", res.body, res.header.Get("Content-Type"), c.wantStatus)
				}
				if res.upstream != a.url {
					t.Errorf("%s = %q, want the instance tried, %s", HeaderUpstream, res.upstream, a.url)
				}
			}
		})
	}
}

func TestShedding(t *testing.T) {
	release := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		io.WriteString(w, "done")
	})
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}, MaxInFlight: 3, Probe: ProbeConfig{Disabled: true}}},
		Options{}, RouteOptions{}, false)

	var wg sync.WaitGroup
	statuses := make([]int, 3)
	for i := range 3 {
		wg.Go(func() { statuses[i] = g.do(t, "GET", "/slow", nil, true).status })
	}
	testkit.Eventually(t, 5*time.Second, "3 requests in flight at the upstream", func() bool { return b.inFlight.Load() == 3 })

	res := g.do(t, "GET", "/one-more", nil, true)
	if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") != "1" || res.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("request over the limit: %d Retry-After %q %s, want 503 Retry-After 1 application/problem+json",
			res.status, res.header.Get("Retry-After"), res.header.Get("Content-Type"))
	}
	if n := b.hits.Load(); n != 3 {
		t.Errorf("upstream hits = %d, want 3: the shed request never reaches it", n)
	}
	if n := g.metric(t, "upstream.shed", attribute.String("service", "svc")); n != 1 {
		t.Errorf("upstream.shed = %d, want 1", n)
	}
	if got := g.pools.Snapshot()[0].InFlight; got != 3 {
		t.Errorf("Snapshot().InFlight = %d, want 3", got)
	}

	close(release)
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("request %d within the limit: status %d, want 200", i, s)
		}
	}
	if res := g.do(t, "GET", "/after", nil, true); res.status != http.StatusOK {
		t.Errorf("after the slow requests finished: status %d, want 200", res.status)
	}
}

// TestRetryBudget sends 100 requests that all fail: the budget lets 0.2 × 100 + the floor
// (1/s × 10s) of them be retried, and no more, until the window has passed.
func TestRetryBudget(t *testing.T) {
	a, b := newBackend(t, hangUp), newBackend(t, hangUp)
	clk := newClock()
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{a.url, b.url}, EjectAfter: 1 << 30, Probe: ProbeConfig{Disabled: true}}},
		Options{Clock: clk.Now, RetryBudget: RetryBudget{Ratio: 0.2, MinPerSecond: 1, Window: 10 * time.Second}}, RouteOptions{}, false)

	for range 100 {
		if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusBadGateway {
			t.Fatalf("status = %d, want 502 from failing instances", res.status)
		}
	}
	if got, want := a.hits.Load()+b.hits.Load(), int64(130); got != want {
		t.Errorf("attempts = %d, want %d (100 requests + 30 retries)", got, want)
	}
	for outcome, want := range map[string]int64{"sent": 30, "budget_exhausted": 70} {
		if n := g.metric(t, "upstream.retries", attribute.String("outcome", outcome)); n != want {
			t.Errorf("upstream.retries{%s} = %d, want %d", outcome, n, want)
		}
	}

	clk.Add(11 * time.Second)
	before := a.hits.Load() + b.hits.Load()
	g.do(t, "GET", "/x", nil, true)
	if got := a.hits.Load() + b.hits.Load() - before; got != 2 {
		t.Errorf("attempts once the window has passed = %d, want 2 (a retry again)", got)
	}
}

// TestRetryBudgetUpdate changes a service's budget with Update while every request fails:
// each phase's retries follow the budget in force, over the counts the window holds.
func TestRetryBudgetUpdate(t *testing.T) {
	a, b := newBackend(t, hangUp), newBackend(t, hangUp)
	clk := newClock()
	svc := func(rb RetryBudget) []ServiceConfig {
		return []ServiceConfig{{Name: "svc", Instances: []string{a.url, b.url}, EjectAfter: 1 << 30,
			Probe: ProbeConfig{Disabled: true}, RetryBudget: rb}}
	}
	g := startGateway(t, svc(RetryBudget{}), Options{Clock: clk.Now, RetryBudget: RetryBudget{Ratio: 0.5, MinPerSecond: 1, Window: 10 * time.Second}}, RouteOptions{}, false)

	phases := []struct {
		name    string
		budget  RetryBudget
		advance time.Duration // before the phase: 11s empties the window
		retries int64         // sent in the phase's 100 requests
	}{
		// The Options' budget: 0.5 × 100 + 1/s × 10s.
		{name: "options budget", retries: 60},
		// A tighter ratio bites at once: 0.1 × 200 + 10 = 30 is below the 60 already sent.
		{name: "tighter ratio", budget: RetryBudget{Ratio: 0.1}, retries: 0},
		// Unlimited retries every failure.
		{name: "unlimited", budget: RetryBudget{Unlimited: true}, retries: 100},
		// A new window starts the counts afresh: 0.2 × 100 + 2/s × 5s.
		{name: "new window", budget: RetryBudget{Ratio: 0.2, MinPerSecond: 2, Window: 5 * time.Second}, retries: 30},
		// Zero fields go back to the Options' budget, in a fresh window.
		{name: "back to options", advance: 11 * time.Second, retries: 60},
	}
	for _, ph := range phases {
		t.Run(ph.name, func(t *testing.T) {
			if err := g.pools.Update(svc(ph.budget)); err != nil {
				t.Fatalf("Update(%+v) = %v", ph.budget, err)
			}
			clk.Add(ph.advance)
			before := a.hits.Load() + b.hits.Load()
			for range 100 {
				if res := g.do(t, "GET", "/x", nil, true); res.status != http.StatusBadGateway {
					t.Fatalf("status = %d, want 502 from failing instances", res.status)
				}
			}
			if got := a.hits.Load() + b.hits.Load() - before - 100; got != ph.retries {
				t.Errorf("retries with budget %+v = %d, want %d", ph.budget, got, ph.retries)
			}
		})
	}
}

func TestUpdateRejectsBadBudget(t *testing.T) {
	b := newBackend(t, nil)
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}}}, Options{}, RouteOptions{}, false)
	tests := []struct {
		name   string
		budget RetryBudget
		field  string
	}{
		{"ratio above 1", RetryBudget{Ratio: 1.5}, "retryBudget.ratio"},
		{"negative ratio", RetryBudget{Ratio: -0.1}, "retryBudget.ratio"},
		{"negative floor", RetryBudget{MinPerSecond: -1}, "retryBudget.minPerSecond"},
		{"negative window", RetryBudget{Window: -time.Second}, "retryBudget.window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.pools.Update([]ServiceConfig{{Name: "svc", Instances: []string{b.url}, RetryBudget: tt.budget}})
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("Update(budget %+v) = %v, want an error naming %s", tt.budget, err, tt.field)
			}
		})
	}
}

func TestForwardErrors(t *testing.T) {
	b := newBackend(t, nil)
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}}}, Options{}, RouteOptions{}, false)

	// Not run: the only instance has not been probed, so it is not known to be ready.
	res := g.do(t, "GET", "/x", nil, true)
	if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") != "1" || !strings.Contains(res.body, "no ready instance") {
		t.Errorf("before any probe: %d Retry-After %q %q, want 503 Retry-After 1 naming no ready instance",
			res.status, res.header.Get("Retry-After"), res.body)
	}
	if n := b.hits.Load(); n != 0 {
		t.Errorf("upstream hits before any probe = %d, want 0", n)
	}
	if n := g.metric(t, "upstream.unavailable"); n != 1 {
		t.Errorf("upstream.unavailable = %d, want 1", n)
	}

	// An unknown service is the gateway's own misconfiguration.
	rec := httptest.NewRecorder()
	g.pools.Forward(rec, httptest.NewRequest(http.MethodGet, "/x", nil), "nope", RouteOptions{})
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("Forward to an unknown service: status %d, want 500", rec.Code)
	}
}
