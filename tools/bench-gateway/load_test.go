package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 1000; i++ {
		lat = append(lat, time.Duration(i)*time.Microsecond)
	}
	r := result{latency: lat}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 500 * time.Microsecond},
		{0.99, 990 * time.Microsecond},
		{0.999, 999 * time.Microsecond},
		{1, 1000 * time.Microsecond},
		{0, time.Microsecond},
	} {
		if got := r.quantile(c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := (result{}).quantile(0.99); got != 0 {
		t.Errorf("quantile of no latencies = %v, want 0", got)
	}
}

// TestOpenKeepsTheSchedule loads a server that stalls one request: the requests due while
// it stalled are still sent on time, and its stall shows in the latencies.
func TestOpenKeepsTheSchedule(t *testing.T) {
	l := loaderFor(t, stallingAt(5))
	res := l.open(context.Background(), 200, 250*time.Millisecond)
	if res.sent != 50 || res.ok != 50 {
		t.Fatalf("open(200/s, 250ms): sent %d ok %d, want 50 and 50", res.sent, res.ok)
	}
	if res.elapsed < 245*time.Millisecond {
		t.Errorf("elapsed = %v, want at least the 250ms schedule", res.elapsed)
	}
	if !slices.IsSorted(res.latency) {
		t.Errorf("latencies are not sorted")
	}
	if got := res.quantile(1); got < 100*time.Millisecond {
		t.Errorf("max latency = %v, want the 100ms stall in it", got)
	}
	if got := res.quantile(0.5); got > 50*time.Millisecond {
		t.Errorf("median latency = %v, want the other requests unaffected by the stall", got)
	}
}

// TestOpenTogether interleaves two loaders on one schedule, the second at a third of the
// first's rate: each gets its share, both results span the same time, and a stall of one
// shows in its own latencies only.
func TestOpenTogether(t *testing.T) {
	slow := loaderFor(t, stallingAt(3))
	fast := loaderFor(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	rs := openTogether(context.Background(), 150, 400*time.Millisecond, []*loader{slow, fast}, []int{3, 1})
	if len(rs) != 2 {
		t.Fatalf("openTogether(2 loaders) = %d results, want 2", len(rs))
	}
	for i, want := range []struct {
		sent int
		load string
	}{{60, "150/s"}, {20, "50/s"}} {
		r := rs[i]
		if r.sent != want.sent || r.ok != want.sent || r.load != want.load {
			t.Errorf("result %d: sent %d ok %d load %q, want %d, %d, %s", i, r.sent, r.ok, r.load, want.sent, want.sent, want.load)
		}
		if r.elapsed != rs[0].elapsed {
			t.Errorf("result %d: elapsed %v, want %v like the other", i, r.elapsed, rs[0].elapsed)
		}
	}
	if got := rs[0].quantile(1); got < 100*time.Millisecond {
		t.Errorf("max latency of the stalling target = %v, want the 100ms stall in it", got)
	}
	if got := rs[1].quantile(0.5); got > 50*time.Millisecond {
		t.Errorf("median latency of the other = %v, want it unaffected by the stall", got)
	}
}

func TestClosedCountsFailures(t *testing.T) {
	var n atomic.Int64
	l := loaderFor(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	res := l.closed(context.Background(), 4, 100*time.Millisecond)
	if res.sent == 0 || res.sent != len(res.latency) || res.sent != int(n.Load()) {
		t.Fatalf("closed: sent %d, %d latencies, server saw %d; want them equal and above 0", res.sent, len(res.latency), n.Load())
	}
	if diff := res.sent - 2*res.ok; diff < -4 || diff > 4 {
		t.Errorf("closed: ok %d of %d, want about half (every other answer is 503)", res.ok, res.sent)
	}
	if got, want := res.failures["503"], res.sent-res.ok; got != want {
		t.Errorf("failures counted as 503 = %d, want all %d failures", got, want)
	}
	if want := "status 503 no"; res.firstErr["503"] != want {
		t.Errorf("first 503 = %q, want %q", res.firstErr["503"], want)
	}
}

// stallingAt answers "ok" at once, except the n-th request, which it holds for 100ms.
func stallingAt(n int64) http.HandlerFunc {
	var seen atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == n {
			time.Sleep(100 * time.Millisecond) // the stall under test
		}
		io.WriteString(w, "ok")
	}
}

// loaderFor returns a loader of a test server answering with h.
func loaderFor(t *testing.T, h http.HandlerFunc) *loader {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newLoader(func(ctx context.Context) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		return req
	})
}

func TestPrintTable(t *testing.T) {
	ms := time.Millisecond
	direct := result{target: targetsByName["direct"].label, load: "1000/s", sent: 2, ok: 2, elapsed: 2 * time.Millisecond,
		latency: []time.Duration{ms, 2 * ms}}
	gw := result{target: targetsByName["gateway-jwt"].label, load: "1000/s", sent: 2, ok: 1, elapsed: 2 * time.Millisecond,
		latency: []time.Duration{ms, 2*ms + 500*time.Microsecond}, cpu: 120 * time.Microsecond}
	gw.fail(&statusError{code: 429, head: []byte(`{"title":"Too many requests"}`)})
	nginx := result{target: targetsByName["nginx"].label, load: "1000/s", sent: 2, ok: 2, elapsed: 2 * time.Millisecond,
		latency: []time.Duration{ms, 4 * ms}, alongside: &result{sent: 2, ok: 2, latency: []time.Duration{ms, 3 * ms}}}
	var out strings.Builder
	printTable(&out, []result{direct, gw, nginx}, true)
	wantLines(t, "printTable", out.String(),
		"| target | load | ok / sent | throughput | p50 | p99 | p99.9 | p99 over direct | proxy CPU / request |",
		"| direct to the upstream | 1000/s | 2 / 2 | 1000/s | 1.000ms | 2.000ms | 2.000ms | — | — |",
		"| gateway, JWT + 2 Redis rules | 1000/s | 1 / 2 | 500/s | 1.000ms | 2.500ms | 2.500ms | +0.500ms | 60µs |",
		"| nginx, plain reverse proxy | 1000/s | 2 / 2 | 1000/s | 1.000ms | 4.000ms | 4.000ms | +1.000ms (vs 3.000ms) | — |",
		"gateway, JWT + 2 Redis rules at 1000/s: 1 failed (429 ×1)",
		`  first 429: status 429 {"title":"Too many requests"}`,
	)
}

// wantLines fails the test for each of wants that the output got of fn lacks.
func wantLines(t *testing.T, fn, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s output lacks %q:\n%s", fn, want, got)
		}
	}
}

func TestPrintTableMeasuringSticks(t *testing.T) {
	atMax := func(name string, ok int) result {
		return result{target: targetsByName[name].label, load: "max (64 conns)", sent: ok, ok: ok, elapsed: time.Second,
			latency: []time.Duration{time.Millisecond}}
	}
	var out strings.Builder
	printTable(&out, []result{atMax("nginx", 20000), atMax("caddy", 10000), atMax("fasthttp-jwt", 9000), atMax("fasthttp", 16000)}, false)
	wantLines(t, "printTable", out.String(),
		"max throughput, Caddy (a Go proxy on net/http, no policies): 50% of nginx's plain proxying\n",
		"max throughput, fasthttp with JWT + 2 Redis rules (the gateway's policy code, not net/http): 45% of nginx's plain proxying\n",
	)
}

// TestPrintTableGraphQLCost: the GraphQL row is set against the JWT row at each load both
// ran, in CPU per request and in added p99.
func TestPrintTableGraphQLCost(t *testing.T) {
	ms := time.Millisecond
	run := func(name, load string, p99 time.Duration, cpu time.Duration, alongside *result) result {
		return result{target: targetsByName[name].label, load: load, sent: 1000, ok: 1000, elapsed: time.Second,
			latency: []time.Duration{p99}, cpu: cpu, alongside: alongside}
	}
	direct := &result{sent: 250, ok: 250, latency: []time.Duration{ms}}
	var out strings.Builder
	printTable(&out, []result{
		run("gateway-jwt", "1000/s", 2*ms, 100*ms, direct),
		run("gateway-jwt", "max (64 conns)", 5*ms, 90*ms, nil),
		run("gateway-graphql", "1000/s", 2*ms+200*time.Microsecond, 112*ms, direct),
		run("gateway-graphql", "max (64 conns)", 6*ms, 97*ms, nil),
	}, false)
	wantLines(t, "printTable", out.String(),
		"GraphQL query over JWT + 2 Redis rules at 1000/s: +12µs CPU per request, +0.200ms added p99\n",
		"GraphQL query over JWT + 2 Redis rules at max (64 conns): +7µs CPU per request\n",
	)
}

func TestSettle(t *testing.T) {
	var n atomic.Int64
	l := loaderFor(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	if err := l.settle(context.Background(), 5*time.Second); err != nil || n.Load() != 3 {
		t.Errorf("settle = %v after %d requests, want nil after 3", err, n.Load())
	}

	never := loaderFor(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusServiceUnavailable) })
	if err := never.settle(context.Background(), 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "status 503") {
		t.Errorf("settle on a target that never recovers = %v, want an error naming its last answer", err)
	}
}

func TestCPUCount(t *testing.T) {
	tests := []struct {
		list    string
		want    int
		wantErr bool
	}{
		{"1", 1, false},
		{"2-3", 2, false},
		{"0,2,4-7", 6, false},
		{"", 0, true},
		{"3-1", 0, true},
		{"a", 0, true},
	}
	for _, tt := range tests {
		got, err := cpuCount(tt.list)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("cpuCount(%q) = %d, %v; want %d, error %v", tt.list, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestCPUTime reads this process's CPU time while burning some: it must grow, and by no
// more than the time that passed (this test burns one CPU).
func TestCPUTime(t *testing.T) {
	self := []int{os.Getpid()}
	start, before := time.Now(), cpuTime(self)
	var grew time.Duration
	for grew < 50*time.Millisecond && time.Since(start) < 10*time.Second {
		grew = cpuTime(self) - before // busy: reading /proc in a loop is the CPU time under test
	}
	if took := time.Since(start); grew < 50*time.Millisecond || grew > took+20*time.Millisecond {
		t.Errorf("cpuTime grew by %v in %v of busy loop, want 50ms or more, and not more than the time passed", grew, took)
	}
	if got := cpuTime([]int{1 << 30}); got != 0 {
		t.Errorf("cpuTime(no such process) = %v, want 0", got)
	}
}

func TestCountPaths(t *testing.T) {
	exposition := `# HELP ratelimit_decisions_total Rule decisions by rule, outcome and path.
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{otel_scope_name="boxoffice.dev/gateway/ratelimit",outcome="allowed",path="store",rule="a"} 90
ratelimit_decisions_total{otel_scope_name="boxoffice.dev/gateway/ratelimit",outcome="allowed",path="store",rule="b"} 30
ratelimit_decisions_total{otel_scope_name="boxoffice.dev/gateway/ratelimit",outcome="denied",path="fallback",rule="b"} 5
ratelimit_decision_duration_seconds_count{path="store"} 120
`
	got := countPaths(exposition)
	if len(got) != 2 || got["store"] != 120 || got["fallback"] != 5 {
		t.Errorf("countPaths() = %v, want store 120, fallback 5", got)
	}
}

func TestParseFlagsTargets(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"default without caddy", nil, []string{"direct", "pools", "gateway", "gateway-jwt", "gateway-graphql", "nginx", "gateway-flood"}},
		{"default with caddy", []string{"-caddy", "/usr/local/bin/caddy"}, []string{"direct", "pools", "gateway", "gateway-jwt", "gateway-graphql", "nginx", "caddy", "gateway-flood"}},
		{"default with fastproxy", []string{"-fastproxy", "/tmp/fastproxy"}, []string{"direct", "pools", "gateway", "gateway-jwt", "gateway-graphql", "nginx", "fasthttp-jwt", "fasthttp", "gateway-flood"}},
		{"default with both", []string{"-fastproxy", "/tmp/fastproxy", "-caddy", "caddy"}, []string{"direct", "pools", "gateway", "gateway-jwt", "gateway-graphql", "nginx", "caddy", "fasthttp-jwt", "fasthttp", "gateway-flood"}},
		{"chosen", []string{"-targets", "nginx,caddy"}, []string{"nginx", "caddy"}},
		{"the flood alone", []string{"-targets", "gateway-flood"}, []string{"gateway-flood"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseFlags(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.targets, tt.want) {
				t.Errorf("parseFlags(%q).targets = %q, want %q", tt.args, cfg.targets, tt.want)
			}
		})
	}
	if _, err := parseFlags([]string{"-targets", "envoy"}, io.Discard); err == nil {
		t.Error("parseFlags(-targets envoy) succeeded, want an unknown-target error")
	}
}
