// Package netdelay is a TCP proxy that adds latency: the link between two regions, emulated
// on one machine. Every byte crossing a Link reaches the other side half a round trip later,
// in each direction, in order, as on a long cable; nothing is dropped or reordered. It counts
// the trips clients make across it, so a test or a scenario can say how often a limiter paid
// the delay. See docs/lessons/distributed.md, "One limit, two regions".
package netdelay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Link listens on a loopback port and forwards each connection to its target, delayed.
type Link struct {
	ln     net.Listener
	target string
	oneWay atomic.Int64 // nanoseconds each byte waits, each way
	trips  atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen starts a link to target (host:port) on a free loopback port, with round trip rtt
// added to every exchange through it.
func Listen(target string, rtt time.Duration) (*Link, error) {
	if rtt < 0 {
		return nil, fmt.Errorf("netdelay: round trip %v: want 0 or more", rtt)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netdelay: listen: %w", err)
	}
	l := &Link{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	l.SetRTT(rtt)
	l.wg.Go(l.accept)
	return l, nil
}

// Addr is where clients connect instead of the target.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// SetRTT changes the round trip added from now on; bytes already in flight keep theirs.
func (l *Link) SetRTT(rtt time.Duration) { l.oneWay.Store(int64(rtt / 2)) }

// RTT is the round trip the link adds.
func (l *Link) RTT() time.Duration { return 2 * time.Duration(l.oneWay.Load()) }

// Trips counts the writes clients sent across the link: one per request, or per pipeline,
// for a client that writes each in one go, as Redis clients do.
func (l *Link) Trips() int64 { return l.trips.Load() }

// Close stops listening, cuts every connection and waits for the link's goroutines.
func (l *Link) Close() error {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	err := l.ln.Close()
	l.wg.Wait()
	return err
}

func (l *Link) accept() {
	for {
		client, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.DialTimeout("tcp", l.target, 5*time.Second)
		if err != nil {
			_ = client.Close() // the client sees the target refuse, as it would directly
			continue
		}
		if !l.track(client, server) {
			return
		}
		l.wg.Go(func() {
			var pair sync.WaitGroup
			pair.Go(func() { l.pipe(server, client, true) })
			pair.Go(func() { l.pipe(client, server, false) })
			pair.Wait()
			l.untrack(client, server)
		})
	}
}

func (l *Link) track(conns ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		l.conns[c] = struct{}{}
	}
	return true
}

func (l *Link) untrack(conns ...net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(l.conns, c)
	}
}

// chunk is what one read took off a connection, and when it may arrive on the other side.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each read delivered its one-way delay after it was read. A reader
// and a writer run apart, so a slow delivery never delays the next read's timestamp. Either
// side ending closes both, as a cut cable would.
func (l *Link) pipe(dst, src net.Conn, fromClient bool) {
	ch := make(chan chunk, 256) // bounded: a writer that falls behind slows the reader
	var w sync.WaitGroup
	w.Go(func() {
		for c := range ch {
			if wait := time.Until(c.due); wait > 0 {
				time.Sleep(wait)
			}
			if _, err := dst.Write(c.data); err != nil {
				break
			}
		}
		_ = dst.Close()
		_ = src.Close()
		for range ch { // let the reader finish
		}
	})
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if fromClient {
				l.trips.Add(1)
			}
			ch <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(time.Duration(l.oneWay.Load()))}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				_ = src.Close()
			}
			break
		}
	}
	close(ch)
	w.Wait()
}
