package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// outcomeClientBody is the outcome of an attempt that failed because of the client's own
// request body: over the gateway's cap, too slow to arrive, cut off or malformed.
const outcomeClientBody = "client_body"

// clientBody is the client's request body as an attempt streams it to an instance. It
// records why reading it failed, so a failure the client caused is answered as the client's
// and never held against the instance, the adaptive limit or the retry budget: the transport
// would report a body over the cap or never finished as a broken connection or a timeout.
// Safe for the transport's reads while the attempt's timer calls stall.
type clientBody struct {
	body    io.ReadCloser
	ctx     context.Context // the attempt's: once it is done, nobody waits for the body
	reading atomic.Bool     // a Read is waiting on the client
	stalled atomic.Bool     // the response timeout fired while a Read was waiting

	mu  sync.Mutex
	err error // the first error other than io.EOF the client's body returned
}

var _ io.ReadCloser = (*clientBody)(nil)

func (b *clientBody) Read(p []byte) (int, error) {
	if b.ctx.Err() != nil {
		// The attempt is over (its timeout fired while the transport was writing to the
		// instance): do not wait on the client for bytes nobody will send, and do not
		// blame the client for it.
		return 0, context.Cause(b.ctx)
	}
	b.reading.Store(true)
	n, err := b.body.Read(p)
	b.reading.Store(false)
	if err != nil && err != io.EOF {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *clientBody) Close() error { return b.body.Close() }

// stall is called when the attempt's response timeout fires. When the transport is still
// waiting for the client's bytes, the instance cannot have answered a request it has not
// received whole: the timeout is the client's. It then reports true, and the caller must
// unblock the waiting Read, which the round trip cannot end without.
func (b *clientBody) stall() bool {
	if !b.reading.Load() {
		return false // done, or the transport is writing: the instance is the slow one
	}
	b.stalled.Store(true)
	return true
}

// failure returns the error reading the client's body ended with, nil when it did not fail
// or b is nil (no body streamed).
func (b *clientBody) failure() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// aLongTimeAgo is a read deadline that has passed: it makes a blocked Read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// unblock ends a Read of r's body that waits on the client by setting the connection's read
// deadline in the past; the connection is then not reused. Where the ResponseWriter cannot
// set deadlines, the Read ends when the client sends, leaves or the read timeout fires. A
// body completing in that very instant ends as canceled (499), still not the instance's.
func unblock(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(aLongTimeAgo)
}

// clientBodyAnswer is how the gateway answers a request whose body could not be read: 413
// over the cap, 408 when the client was too slow (RFC 9110; it may send it again), 499 when
// it went away mid-body (only the access log reads that answer), 400 for a body the server
// could not decode. stalled says the response timeout fired while it waited for the body.
func clientBodyAnswer(client context.Context, err error, stalled bool) (status int, detail string) {
	var ne net.Error
	switch maxErr, tooLarge := errors.AsType[*http.MaxBytesError](err); {
	case tooLarge:
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", maxErr.Limit)
	case stalled, errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout, "request body did not arrive in time"
	case client.Err() != nil, errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		return statusClientClosed, "client closed the request"
	}
	return http.StatusBadRequest, "request body could not be read"
}

// statusClientClosed is nginx's "client closed request": the access log's status for a
// client that left before the answer.
const statusClientClosed = 499
