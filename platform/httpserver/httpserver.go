// Package httpserver builds HTTP servers with limits a public-facing process needs and stops
// them gracefully.
//
// The zero http.Server has no timeouts: a client that sends its headers one byte a minute holds
// a connection and a goroutine forever (slowloris). New sets every timeout; Serve turns a
// cancelled context into a graceful drain with a deadline. Together they refuse a request
// whose length is ambiguous and close its connection (see framing.go), which net/http alone
// does not.
//
// It serves any handler; what a REST API is made of (routes, JSON answers, paging) is
// package httpapi's.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits a server applies to each request. The defaults suit a JSON API.
const (
	DefaultMaxHeaderBytes = 64 << 10 // 64 KiB of request headers
	DefaultMaxBodyBytes   = 1 << 20  // 1 MiB request body (LimitBody)
	// DefaultWriteTimeout bounds writing a whole response; a stream extends its own.
	DefaultWriteTimeout = 60 * time.Second
)

// New returns a server for h with read, write and idle timeouts and a header size limit;
// streaming endpoints (server-sent events) extend their own write deadline with
// http.ResponseController. Served by Serve, it refuses ambiguous framing (framing.go) before
// h runs, for every request, even "OPTIONS *", which net/http would otherwise answer itself:
// the check counts a connection's requests to know which one was flagged.
func New(h http.Handler) *http.Server {
	return &http.Server{
		Handler:                      refuseAmbiguousFraming(h),
		ConnContext:                  withFramingConn,
		DisableGeneralOptionsHandler: true,
		ReadHeaderTimeout:            5 * time.Second,
		ReadTimeout:                  30 * time.Second,
		WriteTimeout:                 DefaultWriteTimeout,
		IdleTimeout:                  120 * time.Second,
		MaxHeaderBytes:               DefaultMaxHeaderBytes,
	}
}

// Serve serves srv on l until ctx is done, then shuts down: the listener closes at once,
// in-flight requests get up to drain to finish, the rest is cut; nil after a clean stop. The
// drain ends as soon as no request is in flight: connections that never sent a request (a
// spare keep-alive dial, a probe), which http.Server.Shutdown alone would wait up to five
// seconds for and report as running, are closed with the idle ones.
func Serve(ctx context.Context, srv *http.Server, l net.Listener, drain time.Duration) error {
	var active activeConns
	active.track(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(framingListener{l}) }()

	select {
	case err := <-errc:
		return fmt.Errorf("serve http on %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(shutdownCtx) }()
	var err error
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
wait:
	for {
		select {
		case err = <-shut:
			break wait
		case <-poll.C:
			if active.count() == 0 {
				_ = srv.Close() // only connections without a request remain
				err = <-shut
				break wait
			}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		_ = srv.Close()
		return fmt.Errorf("drain http on %s: %d requests still running after %v", l.Addr(), active.count(), drain)
	}
	if err != nil {
		return fmt.Errorf("shut down http on %s: %w", l.Addr(), err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http on %s: %w", l.Addr(), err)
	}
	return nil
}

// activeConns counts the connections serving a request right now.
type activeConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// track hooks a onto srv's connection state changes, keeping any hook srv already has.
func (a *activeConns) track(srv *http.Server) {
	a.conns = map[net.Conn]struct{}{}
	next := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		a.mu.Lock()
		if s == http.StateActive {
			a.conns[c] = struct{}{}
		} else {
			delete(a.conns, c)
		}
		a.mu.Unlock()
		if next != nil {
			next(c, s)
		}
	}
}

func (a *activeConns) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.conns)
}

// LimitBody caps request bodies at n bytes; a handler reading past it gets an error and the
// connection is closed after the response. n <= 0 means DefaultMaxBodyBytes.
func LimitBody(n int64) func(http.Handler) http.Handler {
	if n <= 0 {
		n = DefaultMaxBodyBytes
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				fmt.Fprintf(w, `{"type":"about:blank","title":"Request Entity Too Large","status":413,"detail":"request body is larger than %d bytes"}`, n)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}
