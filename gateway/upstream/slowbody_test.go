package upstream

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// firstRead reports, by closing reading, when the body is first read.
type firstRead struct {
	io.ReadCloser
	once    *sync.Once
	reading chan struct{}
}

func (b firstRead) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.reading) })
	return b.ReadCloser.Read(p)
}

// TestSlowRetryableBodyHoldsNoSlot checks that a retryable request whose body trickles in
// takes no concurrency slot while the gateway reads it: the body is read before the slot,
// so a few slow clients cannot shed everyone else's requests with 503s for as long as the
// server's read timeout lets them dawdle.
func TestSlowRetryableBodyHoldsNoSlot(t *testing.T) {
	b := newBackend(t, upload)
	g := startGateway(t, []ServiceConfig{{Name: "svc", Instances: []string{b.url}, MaxInFlight: 1, Probe: ProbeConfig{Disabled: true}}},
		Options{}, RouteOptions{}, false)
	reading := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ro := g.ro
		ro.Retry = true
		if r.URL.Path == "/slow" {
			r.Body = firstRead{ReadCloser: r.Body, once: &once, reading: reading}
		}
		g.pools.Forward(w, r, "svc", ro)
	}))
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /slow HTTP/1.1\r\nHost: gateway\r\nContent-Length: 10\r\n\r\nhello")
	select {
	case <-reading:
	case <-time.After(5 * time.Second):
		t.Fatal("the gateway did not start reading the slow body within 5s")
	}

	g.url = srv.URL
	if res := g.do(t, "POST", "/other", strings.NewReader("a body"), true); res.status != http.StatusOK {
		t.Errorf("POST while a slow body is read = %d %s, want 200: the only slot is free", res.status, res.body)
	}

	fmt.Fprint(conn, "world")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the slow request got no answer: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(body) != "stored" {
		t.Errorf("the slow request, once its body arrived = %d %q, want 200 stored", res.StatusCode, body)
	}
}
