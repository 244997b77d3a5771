package httpserver

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"boxoffice.dev/platform/problem"
)

// A request with both Content-Length and Transfer-Encoding, or Transfer-Encoding over
// HTTP/1.0, is how request smuggling starts (docs/lessons/gateway.md, "One request, read one
// way"). net/http reads it, keeps the connection open and drops Content-Length before a
// handler sees it, so Serve's listener reads each header block as it passes (framingConn)
// and the handler New installs refuses the request it flagged, with Connection: close.

// refuseAmbiguousFraming answers 400 and closes the connection when the request was sent
// with both Content-Length and Transfer-Encoding (or Transfer-Encoding over HTTP/1.0), as
// the framingConn it came on saw; other requests go to next. It also answers "OPTIONS *"
// as net/http's own handler does, as the server hands it here (see New).
func refuseAmbiguousFraming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(framingConnKey{}).(*framingConn); ok && c.nextIsAmbiguous() {
			w.Header().Set("Connection", "close")
			problem.Write(w, r, nil, problem.New(problem.Invalid,
				"the request's length is ambiguous: send either Content-Length or, over HTTP/1.1, Transfer-Encoding: chunked"))
			return
		}
		if r.Method == http.MethodOptions && r.RequestURI == "*" {
			w.Header().Set("Content-Length", "0")
			return
		}
		next.ServeHTTP(w, r)
	})
}

type framingConnKey struct{}

// withFramingConn puts the framingConn c is, if it is one, in the context of its requests.
func withFramingConn(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*framingConn); ok {
		return context.WithValue(ctx, framingConnKey{}, fc)
	}
	return ctx
}

// framingListener wraps each accepted connection in a framingConn.
type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c}, nil
}

// framingConn is a connection that follows the HTTP/1.1 framing of what is read from it
// (header blocks, then bodies by Content-Length or chunks) to find the first request sent
// with an ambiguous length. Read runs on the server's reading goroutine; nextIsAmbiguous on
// the handler's, one request at a time: net/http serves the requests of a connection in
// order and reads a request's whole header block before its handler runs.
type framingConn struct {
	net.Conn
	served atomic.Int64 // requests handed to the handler so far

	mu   sync.Mutex
	scan framingScan
}

func (c *framingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.scan.feed(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// nextIsAmbiguous counts one more request handed to the handler and reports whether it is
// the one the scan flagged.
func (c *framingConn) nextIsAmbiguous() bool {
	n := c.served.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scan.flagged == n
}

// framingScan follows HTTP/1.1 message framing (RFC 9112, sections 2 to 7) byte by byte.
// It stops at the first ambiguous request, after which the connection is closed, and at
// anything it cannot follow (a malformed length or chunk size, a line longer than a server
// accepts), which net/http refuses, closing the connection too.
type framingScan struct {
	state     scanState
	line      []byte // the line being read, in the header, chunk-size and trailer states
	remaining int64  // bytes left of a body or a chunk (with its CRLF)
	requests  int64  // header blocks read
	flagged   int64  // the first ambiguous request, counting from 1; 0 = none yet

	// The header block being read.
	started, http10, length, chunked bool
	contentLength                    int64
}

type scanState int

const (
	inHeader scanState = iota
	inBody
	inChunkSize
	inChunk
	inTrailer
	stopped
)

// maxLine is the longest line the scan follows: net/http refuses a header block over
// MaxHeaderBytes plus 4 KiB, and a chunk-size line over 4 KiB.
const maxLine = DefaultMaxHeaderBytes + 4<<10

func (s *framingScan) feed(b []byte) {
	for len(b) > 0 {
		switch s.state {
		case stopped:
			return
		case inBody, inChunk:
			n := int64(len(b))
			if n > s.remaining {
				n = s.remaining
			}
			s.remaining -= n
			b = b[n:]
			if s.remaining == 0 && s.state == inBody {
				s.state = inHeader
			} else if s.remaining == 0 {
				s.state = inChunkSize
			}
		default:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				s.grow(b)
				return
			}
			s.grow(b[:i])
			b = b[i+1:]
			if s.state != stopped {
				s.endLine(bytes.TrimSuffix(s.line, []byte("\r")))
				s.line = s.line[:0]
				if cap(s.line) > 4<<10 {
					s.line = nil // a long line once is no reason to hold its buffer
				}
			}
		}
	}
}

// grow adds b to the line being read, or stops when the line grows past maxLine.
func (s *framingScan) grow(b []byte) {
	if len(s.line)+len(b) > maxLine {
		s.state, s.line = stopped, nil
		return
	}
	s.line = append(s.line, b...)
}

// endLine takes a whole line (without its line break) in the current state.
func (s *framingScan) endLine(line []byte) {
	switch s.state {
	case inHeader:
		s.headerLine(line)
	case inChunkSize:
		size, _, _ := bytes.Cut(line, []byte(";")) // chunk extensions are ignored
		n, err := strconv.ParseInt(string(bytes.TrimRight(size, " \t")), 16, 64)
		switch {
		case err != nil || n < 0:
			s.state = stopped
		case n == 0:
			s.state = inTrailer
		default:
			s.state, s.remaining = inChunk, n+2
		}
	case inTrailer:
		if len(line) == 0 {
			s.state = inHeader
		}
	}
}

// headerLine takes a line of a header block: the request line, a field, or the empty line
// that ends the block and says how the body is framed.
func (s *framingScan) headerLine(line []byte) {
	if !s.started {
		// An empty line before a request line is skipped, as RFC 9112 (2.2) allows; net/http
		// refuses it instead, closing the connection.
		if len(line) > 0 {
			s.started, s.length, s.chunked, s.contentLength = true, false, false, 0
			s.http10 = bytes.HasSuffix(line, []byte(" HTTP/1.0"))
		}
		return
	}
	if len(line) > 0 {
		name, value, _ := bytes.Cut(line, []byte(":"))
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.ParseInt(string(bytes.Trim(value, " \t")), 10, 64)
			if err != nil || n < 0 {
				s.state = stopped // net/http refuses it and closes the connection
				return
			}
			s.length, s.contentLength = true, n
		case asciiEqualFold(name, "transfer-encoding"):
			s.chunked = true
		}
		return
	}
	s.started = false
	s.requests++
	switch {
	case s.chunked && (s.length || s.http10):
		s.flagged, s.state = s.requests, stopped
	case s.chunked:
		s.state = inChunkSize
	case s.contentLength > 0:
		s.state, s.remaining = inBody, s.contentLength
	}
}

// asciiEqualFold reports whether b is lower, a lowercase header name, regardless of case.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
