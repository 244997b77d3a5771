package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/testkit"
)

// shapedPolicy is a route shaped at 10 a second by a queue of 20 with no wait over 2 s,
// QUEUE replaced by the queue's settings.
const shapedPolicy = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: shaped, match: {method: GET, path: /v1/shaped}, service: svc, auth: none, limits: [shaped]}
limits:
  - {id: shaped, key: route, algorithm: gcra, rate: 10/s, queue: QUEUE}
`

// arrivals records the order in which requests reach the service, by request id.
type arrivals struct {
	mu  sync.Mutex
	ids []string
}

func (a *arrivals) Forward(w http.ResponseWriter, r *http.Request, _ string, _ upstream.RouteOptions) {
	a.mu.Lock()
	a.ids = append(a.ids, r.Header.Get("X-Request-Id"))
	a.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// shapedGateway is a gateway on shapedPolicy with queue, whose limiter's clock stands still:
// every request is decided at one instant, so the turns are exact whatever the machine's load.
func shapedGateway(t *testing.T, queue string) (http.Handler, *arrivals, *testkit.Buffer, *sdkmetric.ManualReader) {
	t.Helper()
	fake := testkit.NewClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 0)
	reader := sdkmetric.NewManualReader()
	m, err := newMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	fw := &arrivals{}
	g := &gateway{
		live: liveOf(t, strings.Replace(shapedPolicy, "QUEUE", queue, 1)), auth: &authn.Authenticator{},
		enforcer: limits.NewEnforcer(ratelimit.NewMemory(fake.Clock()), nil, nil), upstream: fw,
		log: logging.New(logs, slog.LevelInfo, "gateway"), metrics: m, now: fake.Now, newTrace: randomTrace,
	}
	return g.handler(), fw, logs, reader
}

// TestShapedRouteFortyAtOnce: 40 requests at once on a route shaped at 10 a second by a
// queue of 20 and a max delay of 2 s. 20 are served: the first at once and 19 after waiting
// their turn, 100 ms apart, up to 1.9 s; they reach the service in the order of their turns.
// The other 20 are refused with 429. With nodelay the same 20 are served, none waiting.
func TestShapedRouteFortyAtOnce(t *testing.T) {
	for _, tt := range []struct {
		name, queue string
		waited      int // served requests that waited their turn
	}{
		{"queue", "{size: 20, max_delay: 2s}", 19},
		{"nodelay", "{size: 20, nodelay: true}", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, fw, logs, reader := shapedGateway(t, tt.queue)
			codes := make([]int, 40)
			var wg sync.WaitGroup
			for i := range codes {
				wg.Go(func() {
					r := httptest.NewRequest("GET", "/v1/shaped", nil)
					r.Header.Set("X-Request-Id", "r"+strconv.Itoa(i))
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					codes[i] = w.Code
				})
			}
			wg.Wait()
			count := map[int]int{}
			for _, c := range codes {
				count[c]++
			}
			if count[http.StatusNoContent] != 20 || count[http.StatusTooManyRequests] != 20 {
				t.Fatalf("answers %v, want 20 × 204 and 20 × 429", count)
			}

			// The turns each served request was given, from the access log, in the order the
			// service saw them: 0, 100 ms, … never going back.
			queued := map[string]float64{}
			for _, line := range accessLines(t, logs.String()) {
				if line["status"] == float64(http.StatusNoContent) {
					ms, _ := line["queued_ms"].(float64) // absent: passed at once
					queued[line["request_id"].(string)] = ms
				}
			}
			waited, last := 0, -1.0
			for i, id := range fw.ids {
				ms, ok := queued[id]
				switch {
				case !ok:
					t.Fatalf("arrival %d, %s: not logged as served", i, id)
				case ms < last:
					t.Errorf("arrival %d, %s, had waited %vms, after one that waited %vms: out of turn", i, id, ms, last)
				}
				if ms > 0 {
					waited++
				}
				last = ms
			}
			if len(fw.ids) != 20 || waited != tt.waited || last != float64(tt.waited*100) {
				t.Errorf("%d arrivals, %d of them waited, the last %vms; want 20, %d, %dms", len(fw.ids), waited, last, tt.waited, tt.waited*100)
			}
			if got := durationCount(t, reader, "upstream"); got != 20 {
				t.Errorf("gateway request duration count{outcome=upstream} = %d, want 20", got)
			}
		})
	}
}

// TestShapedRouteWaitEnds: a request whose client leaves while it waits, or whose deadline
// comes before its turn, never reaches the service; its place stays spent.
func TestShapedRouteWaitEnds(t *testing.T) {
	h, fw, logs, reader := shapedGateway(t, "{size: 20, max_delay: 2s}")
	call := func(ctx context.Context) int {
		r := httptest.NewRequest("GET", "/v1/shaped", nil).WithContext(ctx)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := call(context.Background()); code != http.StatusNoContent {
		t.Fatalf("first request = %d, want 204 at once", code)
	}
	// The second waits 100 ms: a deadline sooner than that is answered at once.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if code := call(short); code != http.StatusServiceUnavailable {
		t.Errorf("deadline before the turn = %d, want 503", code)
	}
	// The third waits 200 ms; its client goes away first.
	gone, leave := context.WithCancel(context.Background())
	leave()
	call(gone)
	if len(fw.ids) != 1 {
		t.Errorf("the service saw %d requests, want only the first", len(fw.ids))
	}
	var outcomes []any
	for _, line := range accessLines(t, logs.String()) {
		outcomes = append(outcomes, line["outcome"], line["status"])
	}
	want := []any{"upstream", float64(204), outcomeQueueDeadline, float64(503), outcomeQueueLeft, float64(statusClientClosed)}
	if len(outcomes) != len(want) {
		t.Fatalf("access log outcomes %v, want %v", outcomes, want)
	}
	for i := range want {
		if outcomes[i] != want[i] {
			t.Errorf("access log outcomes %v, want %v", outcomes, want)
			break
		}
	}
	// The 503 is the gateway's own answer; a client that left got none.
	if got := counterSum(t, reader, "gateway.rejections"); got != 1 {
		t.Errorf("gateway.rejections = %d, want 1: the 503, not the client that left", got)
	}
}
