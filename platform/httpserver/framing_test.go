package httpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveRaw serves h through New and Serve on loopback until the test ends, and returns the
// address and the paths h was asked for, in order.
func serveRaw(t *testing.T) (addr string, seen func() []string) {
	t.Helper()
	var mu sync.Mutex
	var paths []string
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		w.Write([]byte("read " + string(b)))
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, l, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return l.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), paths...)
	}
}

// exchange writes raw in one write on a new connection and reads the responses until the
// server closes it or a second passes; closed reports whether it closed.
func exchange(t *testing.T, addr, raw string) (resps []*http.Response, bodies []string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for range 10 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			return resps, bodies, !(errors.As(err, &ne) && ne.Timeout())
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response body: %v", err)
		}
		resps, bodies = append(resps, resp), append(bodies, string(b))
	}
	t.Fatal("more than 10 responses")
	return nil, nil, false
}

const smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

func TestAmbiguousLengthIsRefusedAndTheConnectionClosed(t *testing.T) {
	tests := []struct {
		name, raw string
	}{
		{"Content-Length, then Transfer-Encoding",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"Transfer-Encoding, then Content-Length",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n" + smuggled},
		{"in other cases",
			"POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + smuggled},
		{"Transfer-Encoding over HTTP/1.0",
			"POST /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"after a good request",
			"POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi" +
				"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"after a chunked request with a trailer",
			"POST /first HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nhi\r\n0\r\nX-Sum: 1\r\n\r\n" +
				"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, seen := serveRaw(t)
			resps, bodies, closed := exchange(t, addr, tt.raw)
			first := strings.HasPrefix(tt.raw, "POST /first")
			want := 1
			if first {
				want = 2
			}
			if len(resps) != want {
				t.Fatalf("got %d responses %q, want %d: the smuggled request must get no answer", len(resps), bodies, want)
			}
			if !closed {
				t.Errorf("the connection stays open after the refusal, want it closed")
			}
			if first && (resps[0].StatusCode != http.StatusOK || bodies[0] != "read hi") {
				t.Errorf("first request = %d %q, want 200 \"read hi\"", resps[0].StatusCode, bodies[0])
			}
			refusal, body := resps[len(resps)-1], bodies[len(bodies)-1]
			if refusal.StatusCode != http.StatusBadRequest || refusal.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("refusal = %d %s, want 400 application/problem+json", refusal.StatusCode, refusal.Header.Get("Content-Type"))
			}
			var d struct{ Detail string }
			if err := json.Unmarshal([]byte(body), &d); err != nil || !strings.Contains(d.Detail, "length is ambiguous") {
				t.Errorf("refusal body = %s, want a detail saying the length is ambiguous", body)
			}
			for _, p := range seen() {
				if p != "/first" {
					t.Errorf("the handler served %s, want only /first", p)
				}
			}
		})
	}
}

// Requests framed one way, pipelined on one connection, are all answered, in order, and
// the connection stays open: the scan keeps up with every way a body is framed.
func TestUnambiguousRequestsKeepTheConnection(t *testing.T) {
	lookalike := "POST /no HTTP/1.1\r\nContent-Length: 1\r\n\r\nx" // a body that reads like a request
	raw := "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(lookalike)) + "\r\n\r\n" + lookalike +
		"POST /3 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"5\r\nab\r\nc\r\n" + "1E\r\nTransfer-Encoding: chunked\r\n\r\n\r\n" + "0\r\n\r\n" +
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /4 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
	addr, seen := serveRaw(t)
	resps, bodies, closed := exchange(t, addr, raw)
	if closed {
		t.Errorf("the server closed the connection after %d responses %q, want it open", len(resps), bodies)
	}
	if len(resps) != 5 {
		t.Fatalf("got %d responses %q, want 5", len(resps), bodies)
	}
	for i, r := range resps {
		if r.StatusCode != http.StatusOK {
			t.Errorf("response %d = %d %q, want 200", i, r.StatusCode, bodies[i])
		}
	}
	if got, want := strings.Join(seen(), " "), "/1 /2 /3 /4"; got != want {
		t.Errorf("handler served %s, want %s", got, want)
	}
	if want := "read " + lookalike; bodies[1] != want {
		t.Errorf("body = %q, want %q", bodies[1], want)
	}
	if want := "read ab\r\ncTransfer-Encoding: chunked\r\n\r\n"; bodies[2] != want {
		t.Errorf("chunked body = %q, want %q", bodies[2], want)
	}
}

func TestFramingScanStopsWhereItCannotFollow(t *testing.T) {
	for _, raw := range []string{
		"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"GET /" + strings.Repeat("a", maxLine) + " HTTP/1.1\r\n",
	} {
		var s framingScan
		s.feed([]byte(raw))
		s.feed([]byte("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"))
		if s.state != stopped || s.flagged != 0 {
			t.Errorf("scan of %.60q: state %d, flagged %d; want stopped with nothing flagged", raw, s.state, s.flagged)
		}
	}
}

// The scan reads what arrives however it is cut: byte by byte it flags the same request.
func TestFramingScanAcrossReads(t *testing.T) {
	raw := "POST /1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc" +
		"POST /2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" +
		"POST /3 HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
	var s framingScan
	for i := range len(raw) {
		s.feed([]byte{raw[i]})
	}
	if s.flagged != 3 || s.requests != 3 {
		t.Errorf("byte by byte: flagged %d of %d requests, want the 3rd of 3", s.flagged, s.requests)
	}
}
