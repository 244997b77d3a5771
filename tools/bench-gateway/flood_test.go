package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMeasureFlood runs the flood against a stand-in for the gateway that refuses the flood's
// address past its fifth request and counts its decisions as the gateway's /metrics does:
// every answer lands in the part of the result it belongs to, every client dials from its
// own address, and the decisions by path are those of the run alone.
func TestMeasureFlood(t *testing.T) {
	const bearer = "Bearer bench-token"
	var (
		mu        sync.Mutex
		perAddr   = map[string]int{}
		accounts  = map[string]bool{}
		store     atomic.Int64
		localDeny atomic.Int64
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		if r.URL.Path == "/metrics" {
			fmt.Fprintf(w, "ratelimit_decisions_total{outcome=\"allowed\",path=\"store\",rule=\"a\"} %d\n", store.Load())
			fmt.Fprintf(w, "ratelimit_decisions_total{outcome=\"denied\",path=\"local_deny\",rule=\"a\"} %d\n", localDeny.Load())
			return
		}
		mu.Lock()
		perAddr[ip]++
		seen := perAddr[ip]
		mu.Unlock()
		switch {
		case r.Method == http.MethodGet && r.URL.Path == eventsPath && ip == floodAddr:
			if seen > 5 {
				localDeny.Add(1)
				http.Error(w, "too many", http.StatusTooManyRequests)
				return
			}
		case r.Method == http.MethodPost && r.URL.Path == loginPath && ip != floodAddr:
			var creds struct{ Email, Password string }
			if err := json.NewDecoder(r.Body).Decode(&creds); err != nil || r.Header.Get("Content-Type") != "application/json" {
				http.Error(w, "bad login", http.StatusBadRequest)
				return
			}
			mu.Lock()
			reused := accounts[creds.Email]
			accounts[creds.Email] = true
			mu.Unlock()
			if reused {
				http.Error(w, "account asked twice", http.StatusConflict)
				return
			}
			if creds.Password != benchPassword {
				store.Add(1)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		case r.Method == http.MethodGet && r.URL.Path == benchPath && ip != floodAddr:
			if r.Header.Get("Authorization") != bearer {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
		default:
			http.Error(w, "not this route from "+ip, http.StatusNotFound)
			return
		}
		store.Add(1)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	header := http.Header{"Authorization": {bearer}}
	tgt := target{name: floodTarget, label: "stand-in", start: func(context.Context, *bench) (*running, error) {
		return &running{url: srv.URL + benchPath, header: header, stop: func() {}, metrics: srv.URL + "/metrics"}, nil
	}}

	f, err := (&bench{}).measureFlood(context.Background(), config{duration: 400 * time.Millisecond}, tgt)
	if err != nil {
		t.Fatalf("measureFlood: %v", err)
	}

	// The first request of each route was the check before the run: the flood kept 4 of its 5.
	if f.flood.ok != 4 || f.flood.failures["429"] != f.flood.sent-4 || f.flood.sent < 100 {
		t.Errorf("flood: sent %d, ok %d, failures %v; want ok 4, every other answer 429, and at least 100 sent", f.flood.sent, f.flood.ok, f.flood.failures)
	}
	if f.floodRate() <= 0 || f.refusedShare() < 0.9 {
		t.Errorf("flood rate %.0f/s, refused share %.2f; want above 0 and above 0.9", f.floodRate(), f.refusedShare())
	}
	// 5 logins and 5 reads a second from each of 20 addresses, for 0.4s: 40 of each.
	want := othersEach * othersAddrs * 400 / 1000
	if f.logins.sent != want || f.reads.sent != want {
		t.Errorf("others sent %d logins and %d reads, want %d of each", f.logins.sent, f.reads.sent, want)
	}
	if f.logins.ok != want/2 || f.logins.failures["401"] != want/2 || f.reads.ok != want {
		t.Errorf("logins: ok %d, failures %v; reads: ok %d, failures %v; want %d ok and %d 401, all reads ok",
			f.logins.ok, f.logins.failures, f.reads.ok, f.reads.failures, want/2, want/2)
	}
	if f.othersServed() != f.othersSent() || f.othersRefused() != 0 {
		t.Errorf("others served %d of %d, %d 503; want all, none", f.othersServed(), f.othersSent(), f.othersRefused())
	}
	// Decisions during the run only: the three checks before it are not counted.
	if got, wantStore := f.paths["store"], float64(f.flood.ok+f.othersSent()); got != wantStore {
		t.Errorf("paths[store] = %v, want %v (the run's answers that were not refused)", got, wantStore)
	}
	if got := f.paths["local_deny"]; got != float64(f.flood.failures["429"]) {
		t.Errorf("paths[local_deny] = %v, want the flood's %d 429s", got, f.flood.failures["429"])
	}
	mu.Lock()
	defer mu.Unlock()
	var addrs []string
	for ip := range perAddr {
		addrs = append(addrs, ip)
	}
	slices.Sort(addrs)
	if len(addrs) != 1+othersAddrs || !slices.Contains(addrs, floodAddr) || !slices.Contains(addrs, "127.0.0.22") {
		t.Errorf("requests came from %v, want %s and 127.0.0.%d … 127.0.0.%d", addrs, floodAddr, othersFirst, othersFirst+othersAddrs-1)
	}
}

func TestMergeResults(t *testing.T) {
	ms := time.Millisecond
	a := result{target: "t", load: "5/s", sent: 3, ok: 1, elapsed: 2 * time.Second, latency: []time.Duration{ms, 4 * ms, 5 * ms}}
	a.fail(&statusError{code: 401})
	a.fail(&statusError{code: 503, head: []byte("first")})
	b := result{target: "t", load: "5/s", sent: 2, ok: 1, elapsed: 3 * time.Second, latency: []time.Duration{2 * ms, 3 * ms}}
	b.fail(&statusError{code: 503, head: []byte("second")})
	got := mergeResults([]result{a, {}, b})
	if got.sent != 5 || got.ok != 2 || got.elapsed != 3*time.Second || got.load != "5/s" {
		t.Errorf("mergeResults: sent %d, ok %d, elapsed %v, load %q; want 5, 2, 3s, 5/s", got.sent, got.ok, got.elapsed, got.load)
	}
	if want := []time.Duration{ms, 2 * ms, 3 * ms, 4 * ms, 5 * ms}; !slices.Equal(got.latency, want) {
		t.Errorf("mergeResults latencies = %v, want %v", got.latency, want)
	}
	if got.failures["401"] != 1 || got.failures["503"] != 2 || got.firstErr["503"] != "status 503 first" {
		t.Errorf("mergeResults failures = %v, first %q; want 401 ×1, 503 ×2, the first 503 the earliest result's", got.failures, got.firstErr["503"])
	}
	if empty := mergeResults(nil); empty.sent != 0 || empty.failures != nil || empty.quantile(0.99) != 0 {
		t.Errorf("mergeResults(nil) = %+v, want the zero result", empty)
	}
}

func TestPathCounts(t *testing.T) {
	tests := []struct {
		name  string
		paths map[string]float64
		want  string
	}{
		{"not read", nil, "—"},
		{"none", map[string]float64{}, "store 0 · local_deny 0 · fallback 0 · fail_closed 0"},
		{"flood", map[string]float64{"local_deny": 60000, "store": 1500.4}, "store 1500 · local_deny 60000 · fallback 0 · fail_closed 0"},
		{"other paths after, by name, if they decided", map[string]float64{"store": 1, "memory": 7, "lease": 0, "fail_closed": 2}, "store 1 · local_deny 0 · fallback 0 · fail_closed 2 · memory 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pathCounts(tt.paths); got != tt.want {
				t.Errorf("pathCounts(%v) = %q, want %q", tt.paths, got, tt.want)
			}
		})
	}
}

func TestPrintFloodTable(t *testing.T) {
	flood := result{load: "max (16 conns)", sent: 10000, ok: 100, elapsed: 2 * time.Second, latency: []time.Duration{time.Millisecond}}
	for range 9900 {
		flood.fail(&statusError{code: 429, head: []byte(`{"title":"Too many requests"}`)})
	}
	logins := result{sent: 4, ok: 2, latency: []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 8 * time.Millisecond}}
	logins.fail(&statusError{code: 401})
	logins.fail(&statusError{code: 503, head: []byte(`{"title":"Service unavailable"}`)})
	reads := result{sent: 4, ok: 4, latency: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond}}
	f := floodResult{target: "gateway, flood", flood: flood, logins: logins, reads: reads, others: "200/s from 20 addresses",
		paths: map[string]float64{"store": 120, "local_deny": 9800, "fail_closed": 1}}

	var out strings.Builder
	printFloodTable(&out, []floodResult{f}, true)
	wantLines(t, "printFloodTable", out.String(),
		"| target | flood, 1 address | flood answered 429 | others | others ok / sent | others p99 | others 503 | decisions by path |\n|---|---|---|---|---|---|---|---|\n",
		"| gateway, flood | 5000/s, max (16 conns) | 99.0% | 200/s from 20 addresses | 7 / 8 (87.5%) | 8.000ms | 1 | store 120 · local_deny 9800 · fallback 0 · fail_closed 1 |\n",
		"gateway, flood, flood: 9900 of 10000 not 200 (429 ×9900)\n",
		"gateway, flood, others' logins: 2 of 4 not 200 (401 ×1, 503 ×1)\n",
		`  first 503: status 503 {"title":"Service unavailable"}`,
	)
	if strings.Contains(out.String(), "others' reads") || strings.Contains(out.String(), "measured nothing") {
		t.Errorf("printFloodTable reports on reads that all passed, or on a flood that was refused:\n%s", out.String())
	}

	out.Reset()
	f.flood = result{load: "max (16 conns)", sent: 50, ok: 50, elapsed: time.Second}
	printFloodTable(&out, []floodResult{f}, false)
	wantLines(t, "printFloodTable", out.String(), "gateway, flood: the flood got no 429, so it never outran its limit and the row measured nothing\n")

	out.Reset()
	printFloodTable(&out, nil, true)
	if out.Len() != 0 {
		t.Errorf("printFloodTable(no runs) wrote %q, want nothing", out.String())
	}
}

func TestLoginRequest(t *testing.T) {
	var accounts atomic.Int64
	newRequest := loginRequest("http://127.0.0.1:1"+loginPath, &accounts)
	for i, want := range []struct{ email, password string }{
		{"fan-1@example.org", benchPassword}, {"fan-2@example.org", "wrong"}, {"fan-3@example.org", benchPassword},
	} {
		req := newRequest(context.Background())
		var got struct{ Email, Password string }
		if err := json.NewDecoder(req.Body).Decode(&got); err != nil {
			t.Fatalf("login %d: body is not JSON: %v", i+1, err)
		}
		if got.Email != want.email || got.Password != want.password || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("login %d = %s %s %+v, want POST application/json %+v", i+1, req.Method, req.Header.Get("Content-Type"), got, want)
		}
	}
}
