package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/testkit"
)

// abortPolicy puts each consequence of a client hanging up on a route of its own.
const abortPolicy = `
services:
  - {name: echo, instances: ["BACKEND"], probe: {interval: 50ms, timeout: 500ms, healthy_after: 1}}
routes:
  - {id: stream, match: {method: GET, path: /v1/stream}, service: echo, auth: none, limits: [one-at-a-time]}
  - {id: ask, match: {method: POST, path: /v1/ask}, service: echo, auth: none, limits: [tokens]}
  - {id: plain, match: {method: GET, path: /v1/plain}, service: echo, auth: none}
limits:
  - {id: one-at-a-time, key: ip, algorithm: concurrency, rate: 1/1m}
  - {id: tokens, key: ip, algorithm: fixed_window, rate: 1000/1d, cost_header: X-Boxoffice-Tokens}
`

// newHoldingBackend is an upstream that, for a request carrying X-Test-Hold, sends its
// headers (X-Boxoffice-Tokens from X-Test-Tokens) and a first chunk of body, then holds the
// rest back until the gateway gives up on it; other requests get a short answer at once.
func newHoldingBackend(t *testing.T) *backend {
	t.Helper()
	return serveBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if tokens := r.Header.Get("X-Test-Tokens"); tokens != "" {
			w.Header().Set("X-Boxoffice-Tokens", tokens)
		}
		if r.Header.Get("X-Test-Hold") == "" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 4096)))
		_ = http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second): // bounds the test, should the gateway never give up
		}
	})
}

// hangUpMidBody sends a request the backend answers slowly, reads its headers and the
// first bytes of its body, then closes the connection.
func hangUpMidBody(t *testing.T, method, url string, header ...string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test-Hold", "1")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		t.Fatalf("%s %s = %d, want 200 before hanging up", method, url, res.StatusCode)
	}
	if _, err := io.ReadFull(res.Body, make([]byte, 100)); err != nil {
		t.Fatalf("read the first bytes of %s %s: %v", method, url, err)
	}
	res.Body.Close() // unread body left: the transport closes the connection
}

// TestClientHangsUpMidBody: a client that goes away while its answer streams still has its
// concurrency slot released, the answer's cost charged, and its line in the access log, as
// a client that read to the end does.
func TestClientHangsUpMidBody(t *testing.T) {
	be := newHoldingBackend(t)
	rd := testkit.StartRedis(t)
	gw := startGateway(t, abortPolicy, be, map[string]string{"REDIS_URL": rd.URL()})

	t.Run("the concurrency slot is released", func(t *testing.T) {
		hangUpMidBody(t, "GET", gw.base+"/v1/stream")
		// The rule's window is a minute: a slot left to expire would refuse for that long.
		testkit.Eventually(t, 3*time.Second, "the next request takes the one slot", func() bool {
			return gw.call(t, "GET", "/v1/stream", "").status == http.StatusOK
		})
	})

	t.Run("the answer's cost is charged", func(t *testing.T) {
		hangUpMidBody(t, "POST", gw.base+"/v1/ask", "X-Test-Tokens", "500")
		// Each poll costs 1 token: remaining is 999 - polls until the charge lands, then 499 less.
		polls := 0
		testkit.Eventually(t, 3*time.Second, "500 tokens charged for the cut-off answer", func() bool {
			polls++
			res := gw.call(t, "POST", "/v1/ask", "")
			left, _ := strconv.Atoi(res.header.Get("X-RateLimit-Remaining"))
			return res.status == http.StatusOK && left <= 1000-500-1
		})
		if polls >= 499 {
			t.Fatalf("remaining fell by polling alone (%d polls), not by the charge", polls)
		}
	})

	t.Run("the access log records it", func(t *testing.T) {
		hangUpMidBody(t, "GET", gw.base+"/v1/plain")
		var line map[string]any
		testkit.Eventually(t, 3*time.Second, "an access log line for the request", func() bool {
			for _, l := range gw.accessLog(t) {
				if l["route"] == "plain" {
					line = l
					return true
				}
			}
			return false
		})
		if line["outcome"] != outcomeClientClosed || line["status"] != float64(http.StatusOK) {
			t.Errorf("access log outcome, status = %v, %v, want %s, 200 (the status the client got)", line["outcome"], line["status"], outcomeClientClosed)
		}
		if bytes, _ := line["bytes"].(float64); bytes < 100 {
			t.Errorf("access log bytes = %v, want at least the 100 the client read", line["bytes"])
		}
	})
}

// panickingForwarder answers 204, or, when panicWith is set, writes wrote bytes of a 200
// answer (none: no status either) and panics with panicWith, as the reverse proxy does
// when a body copy fails.
type panickingForwarder struct {
	panicWith any
	wrote     int
}

func (f *panickingForwarder) Forward(w http.ResponseWriter, _ *http.Request, _ string, _ upstream.RouteOptions) {
	if f.panicWith == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if f.wrote > 0 {
		_, _ = w.Write(make([]byte, f.wrote))
	}
	panic(f.panicWith)
}

// TestPanicIsRecordedThenRethrown: whatever a handler panics with, the request's slot is
// released and its access log line and metrics written, then the panic goes on to net/http
// unchanged (which aborts the connection).
func TestPanicIsRecordedThenRethrown(t *testing.T) {
	live := liveOf(t, `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: stream, match: {method: GET, path: /v1/stream}, service: svc, auth: none, limits: [one-at-a-time]}
limits:
  - {id: one-at-a-time, key: ip, algorithm: concurrency, rate: 1/1m}
`)
	reader := sdkmetric.NewManualReader()
	m, err := newMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	fw := &panickingForwarder{}
	g := &gateway{
		live: live, auth: &authn.Authenticator{}, enforcer: limits.NewEnforcer(ratelimit.NewMemory(clock.Clock{}), nil, nil),
		upstream: fw, log: logging.New(logs, slog.LevelInfo, "gateway"), metrics: m, now: time.Now, newTrace: randomTrace,
	}
	h := g.handler()
	bug := errors.New("bug")

	tests := []struct {
		name        string
		panicWith   any
		wrote       int
		clientGone  bool
		wantOutcome string
		wantStatus  int
	}{
		{"the client hung up mid-body", http.ErrAbortHandler, 100, true, outcomeClientClosed, http.StatusOK},
		{"the upstream broke its body off", http.ErrAbortHandler, 100, false, outcomeUpstreamAborted, http.StatusOK},
		{"a bug after the status", bug, 100, false, outcomePanic, http.StatusOK},
		{"a bug before any answer", bug, 0, false, outcomePanic, http.StatusInternalServerError},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A client of its own: the slot of the previous case's last request may still
			// be being released.
			client := "192.0.2." + strconv.Itoa(i+1) + ":1234"
			*fw = panickingForwarder{panicWith: tt.panicWith, wrote: tt.wrote}
			before, counted := len(accessLines(t, logs.String())), durationCount(t, reader, tt.wantOutcome)
			r := httptest.NewRequest("GET", "/v1/stream", nil)
			r.RemoteAddr = client
			if tt.clientGone {
				ctx, cancel := context.WithCancel(r.Context())
				cancel()
				r = r.WithContext(ctx)
			}
			if got := serveRecovering(h, r); got != tt.panicWith {
				t.Fatalf("ServeHTTP panicked with %v, want %v", got, tt.panicWith)
			}

			lines := accessLines(t, logs.String())
			if len(lines) != before+1 {
				t.Fatalf("access log lines = %d, want %d", len(lines), before+1)
			}
			line := lines[before]
			if line["outcome"] != tt.wantOutcome || line["status"] != float64(tt.wantStatus) {
				t.Errorf("access log outcome, status = %v, %v, want %s, %d", line["outcome"], line["status"], tt.wantOutcome, tt.wantStatus)
			}
			if got := durationCount(t, reader, tt.wantOutcome); got != counted+1 {
				t.Errorf("gateway.request.duration{outcome=%s} count = %d, want %d", tt.wantOutcome, got, counted+1)
			}

			fw.panicWith = nil
			testkit.Eventually(t, 2*time.Second, "the slot of the panicked request is released", func() bool {
				w, r := httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/stream", nil)
				r.RemoteAddr = client
				h.ServeHTTP(w, r)
				return w.Code == http.StatusNoContent
			})
		})
	}
}

// serveRecovering serves r on h and returns what it panicked with, nil if it returned.
func serveRecovering(h http.Handler, r *http.Request) (p any) {
	defer func() { p = recover() }()
	h.ServeHTTP(httptest.NewRecorder(), r)
	return nil
}

// accessLines returns the access log lines among the JSON lines of logs.
func accessLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if l == "" {
			continue
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if line["msg"] == "access" {
			out = append(out, line)
		}
	}
	return out
}

// durationCount is how many requests gateway.request.duration counted with outcome.
func durationCount(t *testing.T, reader *sdkmetric.ManualReader, outcome string) uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if m.Name != "gateway.request.duration" || !ok {
				continue
			}
			for _, dp := range h.DataPoints {
				if v, _ := dp.Attributes.Value("outcome"); v.AsString() == outcome {
					n += dp.Count
				}
			}
		}
	}
	return n
}
