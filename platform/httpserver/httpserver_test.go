package httpserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestServeDrainsInFlightRequest(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "finished")
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, l, 5*time.Second) }()

	type result struct {
		body string
		err  error
	}
	resc := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + l.Addr().String())
		if err != nil {
			resc <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		resc <- result{string(b), err}
	}()

	<-started
	cancel() // shutdown begins while the request is in flight
	// New connections are refused once shutdown has closed the listener.
	deadline := time.Now().Add(2 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", l.Addr().String(), 100*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepts connections after shutdown began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)

	if r := <-resc; r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request = %q, %v; want it to complete with \"finished\"", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v, want nil after a clean drain", err)
	}
}

func TestServeCutsAfterDrainDeadline(t *testing.T) {
	started := make(chan struct{})
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, l, 50*time.Millisecond) }()
	go http.Get("http://" + l.Addr().String())
	<-started
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "still running") {
			t.Fatalf("Serve = %v, want a drain deadline error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain deadline")
	}
}

// A connection that never sent a request (a client's spare keep-alive dial) holds no work:
// the drain must not wait for it, nor report it as a request still running.
func TestServeClosesConnectionsWithoutARequest(t *testing.T) {
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, l, 2*time.Second) }()

	// One connection served a request and sits idle; another never sends one.
	resp, err := http.Get("http://" + l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil: no request was in flight", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	silent.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatalf("silent connection read %d bytes after shutdown, want it closed", n)
	}
}

func TestLimitBody(t *testing.T) {
	h := LimitBody(10)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	tests := []struct {
		name string
		body string
		want int
	}{
		{"small", "12345", http.StatusNoContent},
		{"declared too large", strings.Repeat("x", 11), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body)))
			if rec.Code != tt.want {
				t.Errorf("POST %d bytes = %d, want %d", len(tt.body), rec.Code, tt.want)
			}
		})
	}
	t.Run("streamed too large", func(t *testing.T) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(strings.NewReader(strings.Repeat("x", 50))))
		req.ContentLength = -1
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST chunked 50 bytes = %d, want 413", rec.Code)
		}
	})
}
