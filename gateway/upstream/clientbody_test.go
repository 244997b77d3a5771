package upstream

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/testkit"
)

// upload is a backend handler that reads the whole body before it answers, as a service
// that stores uploads does: it cannot answer early and hide what happened to the body.
func upload(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	io.WriteString(w, "stored")
}

// chunked is a body of n bytes whose length the client does not declare: it goes out
// chunked, and only the cap can stop it.
func chunked(n int) io.Reader { return struct{ io.Reader }{strings.NewReader(strings.Repeat("x", n))} }

// wantProblem checks that res is a problem+json answer with status and detail.
func wantProblem(t *testing.T, what string, res response, status int, detail string) {
	t.Helper()
	var d problem.Details
	if err := json.Unmarshal([]byte(res.body), &d); err != nil {
		t.Errorf("%s: body %q is not a problem: %v", what, res.body, err)
	}
	if res.status != status || res.header.Get("Content-Type") != "application/problem+json" ||
		d.Status != status || d.Code != problem.Invalid || d.Detail != detail {
		t.Errorf("%s = %d %s %+v, want %d application/problem+json, code %s, detail %q",
			what, res.status, res.header.Get("Content-Type"), d, status, problem.Invalid, detail)
	}
}

// TestOversizedBodyIsTheClients sends, again and again, bodies over the gateway's cap: the
// client gets 413 each time, and the instance that was reading them stays in rotation.
func TestOversizedBodyIsTheClients(t *testing.T) {
	const ejectAfter = 3
	for _, c := range []struct {
		name         string
		body         func() io.Reader
		retry        bool // the body is read into memory first, for a retry
		wantAttempts int64
	}{
		{"chunked, streamed", func() io.Reader { return chunked(4096) }, false, ejectAfter + 1},
		{"declared length, streamed", func() io.Reader { return strings.NewReader(strings.Repeat("x", 4096)) }, false, ejectAfter + 1},
		{"chunked, kept for a retry", func() io.Reader { return chunked(4096) }, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t, upload)
			g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}, EjectAfter: ejectAfter,
				Probe: ProbeConfig{Disabled: true}}}, Options{}, RouteOptions{}, false)
			g.maxBody = 1024

			for i := range ejectAfter + 1 {
				res := g.do(t, "POST", "/upload", c.body(), c.retry)
				wantProblem(t, fmt.Sprintf("POST 4 KiB #%d", i+1), res, http.StatusRequestEntityTooLarge,
					"request body is larger than 1024 bytes")
			}

			if s := g.status(t, b.url); s.Ejected || !s.Routable || s.Failures != 0 {
				t.Errorf("after %d bodies over the cap: ejected %v, routable %v, failures %d; want false, true, 0",
					ejectAfter+1, s.Ejected, s.Routable, s.Failures)
			}
			if res := g.do(t, "POST", "/upload", strings.NewReader("small"), c.retry); res.status != http.StatusOK || res.body != "stored" {
				t.Errorf("then a body under the cap = %d %q, want 200 stored", res.status, res.body)
			}
			if res := g.do(t, "GET", "/x", nil, false); res.status != http.StatusOK {
				t.Errorf("then GET = %d, want 200", res.status)
			}
			for _, m := range []struct {
				name, key, value string
				want             int64
			}{
				{"upstream.requests", "outcome", outcomeClientBody, c.wantAttempts},
				{"upstream.requests", "outcome", "error", 0},
				{"upstream.requests", "outcome", "connect_error", 0},
				{"upstream.retries", "outcome", "sent", 0},
				{"upstream.ejections", "service", "svc", 0},
			} {
				if got := g.metric(t, m.name, attribute.String(m.key, m.value)); got != m.want {
					t.Errorf("%s{%s=%s} = %d, want %d", m.name, m.key, m.value, got, m.want)
				}
			}
		})
	}
}

// TestBrokenBodyIsTheClients starts a body and never finishes it properly: the client stops
// sending, sends a malformed chunk, or hangs up. The instance cannot answer a request it has
// not received whole, so neither its ejection count nor the service's adaptive limit hears
// of it. The backend moves the fake clock past the latency target, so that an attempt taken
// for the service's answer would cut the limit.
func TestBrokenBodyIsTheClients(t *testing.T) {
	for _, c := range []struct {
		name       string
		then       string // what the client sends once the backend has the request
		hangUp     bool   // the client leaves instead of waiting for an answer
		wantStatus int
		wantDetail string
	}{
		{"stops sending until the response timeout", "", false, http.StatusRequestTimeout, "request body did not arrive in time"},
		{"sends a malformed chunk", "zz\r\n", false, http.StatusBadRequest, "request body could not be read"},
		{"hangs up mid-body", "", true, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			entered := make(chan struct{}, 1)
			b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					clk.Add(300 * time.Millisecond)
					entered <- struct{}{}
				}
				upload(w, r)
			})
			svc := ServiceConfig{Name: "svc", Instances: []string{b.url}, EjectAfter: 1, MaxInFlight: 4,
				Adaptive: AdaptiveConcurrency{LatencyTarget: 100 * time.Millisecond}, Probe: ProbeConfig{Disabled: true}}
			g := startGateway(t, []ServiceConfig{svc}, Options{Clock: clk.Now}, RouteOptions{ResponseTimeout: 300 * time.Millisecond}, false)

			conn, err := net.Dial("tcp", strings.TrimPrefix(g.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprint(conn, "POST /upload HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
			select {
			case <-entered:
			case <-time.After(5 * time.Second):
				t.Fatal("the request did not reach the backend within 5s")
			}
			fmt.Fprint(conn, c.then)
			if c.hangUp {
				conn.Close()
			} else {
				conn.SetReadDeadline(time.Now().Add(5 * time.Second)) // the old code waited for the client
				res, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatalf("no answer within 5s (response timeout 300ms): %v", err)
				}
				body, _ := io.ReadAll(res.Body)
				wantProblem(t, "broken body", response{status: res.StatusCode, header: res.Header, body: string(body)},
					c.wantStatus, c.wantDetail)
				conn.Close()
			}
			testkit.Eventually(t, 5*time.Second, "the attempt over", func() bool { return g.service(t).InFlight == 0 })

			if s := g.status(t, b.url); s.Ejected || s.Failures != 0 {
				t.Errorf("after a broken body: ejected %v, failures %d; want false, 0 (EjectAfter 1)", s.Ejected, s.Failures)
			}
			if got := g.service(t).ConcurrencyLimit; got != 4 {
				t.Errorf("after a broken body the backend took 300ms to get, concurrency limit = %d, want 4 (not cut)", got)
			}
			for _, outcome := range []string{outcomeClientBody, "timeout", "canceled"} {
				want := int64(0)
				if outcome == outcomeClientBody {
					want = 1
				}
				if got := g.metric(t, "upstream.requests", attribute.String("outcome", outcome)); got != want {
					t.Errorf("upstream.requests{outcome=%s} = %d, want %d", outcome, got, want)
				}
			}
			if res := g.do(t, "GET", "/x", nil, false); res.status != http.StatusOK {
				t.Errorf("then GET = %d, want 200", res.status)
			}
		})
	}
}

// TestUpstreamFailuresStillEject checks the other side: an instance that fails while a body
// streams to it is still ejected, and a client's bad body between two real failures neither
// counts as one nor, as a success would, wipes the first out.
func TestUpstreamFailuresStillEject(t *testing.T) {
	t.Run("connection refused while a body waits", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String()
		l.Close()
		g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{dead}, EjectAfter: 1,
			Probe: ProbeConfig{Disabled: true}}}, Options{}, RouteOptions{}, false)
		g.maxBody = 1024

		if res := g.do(t, "POST", "/upload", chunked(4096), false); res.status != http.StatusBadGateway {
			t.Errorf("POST to a dead instance = %d %s, want 502", res.status, res.body)
		}
		if s := g.status(t, dead); !s.Ejected {
			t.Errorf("dead instance after a connection refused: ejected %v, want true (EjectAfter 1)", s.Ejected)
		}
		if got := g.metric(t, "upstream.requests", attribute.String("outcome", "connect_error")); got != 1 {
			t.Errorf("upstream.requests{outcome=connect_error} = %d, want 1", got)
		}
	})

	t.Run("broken off, with a bad body between", func(t *testing.T) {
		b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/crash" {
				hangUp(w, r)
				return
			}
			upload(w, r)
		})
		g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}, EjectAfter: 2,
			Probe: ProbeConfig{Disabled: true}}}, Options{}, RouteOptions{}, false)
		g.maxBody = 1024

		steps := []struct {
			method, path string
			body         io.Reader
			wantStatus   int
			wantFailures int64
			wantEjected  bool
		}{
			{"GET", "/crash", nil, http.StatusBadGateway, 1, false},
			{"POST", "/upload", chunked(4096), http.StatusRequestEntityTooLarge, 1, false},
			{"GET", "/crash", nil, http.StatusBadGateway, 0, true}, // the ejection resets the count
		}
		for i, s := range steps {
			res := g.do(t, s.method, s.path, s.body, false)
			st := g.status(t, b.url)
			if res.status != s.wantStatus || st.Failures != s.wantFailures || st.Ejected != s.wantEjected {
				t.Errorf("step %d, %s %s = %d, then failures %d, ejected %v; want %d, %d, %v",
					i+1, s.method, s.path, res.status, st.Failures, st.Ejected, s.wantStatus, s.wantFailures, s.wantEjected)
			}
		}
	})
}
