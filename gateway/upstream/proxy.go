package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/platform/problem"
)

// HeaderUpstream names, on the response, the instance that answered (or was tried last when
// none did), for tests and debugging.
const HeaderUpstream = "X-Boxoffice-Upstream"

// Defaults of RouteOptions.
const (
	defaultConnectTimeout  = 2 * time.Second
	defaultResponseTimeout = 30 * time.Second
)

// maxReplayBody is the largest request body kept in memory so that a retry can send it again.
// A larger body streams to the first instance and its request is not retried.
const maxReplayBody = 1 << 20

// errResponseTimeout ends an attempt whose response headers did not arrive in time.
var errResponseTimeout = errors.New("upstream response timeout")

// propagator writes the attempt's trace context into the upstream request, in the format
// every BoxOffice hop reads (W3C traceparent and baggage).
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Forward sends r to an instance of service and streams the answer to w: 503 when shed or no
// instance is ready, one retry elsewhere after a connection failure or timeout when ro.Retry
// and the budget allow, else 502 (504 for a timeout). Once upstream headers arrive it writes
// nothing of its own: a body cut off aborts the client's connection. See
// docs/lessons/failure-modes.md.
func (p *Pools) Forward(w http.ResponseWriter, r *http.Request, service string, ro RouteOptions) {
	pl := (*p.pools.Load())[service]
	if pl == nil {
		problem.Write(w, r, p.log, fmt.Errorf("upstream: no service %q", service))
		return
	}
	ctx := r.Context()
	ro = ro.withDefaults()
	// A body kept for a retry is read before the slot is taken: a client trickling it in is
	// not using the service, and must not hold its concurrency for as long as the server's
	// read timeout lets it.
	body, replayable, err := replayBody(r, ro.Retry)
	if err != nil {
		writeBodyError(w, r, err)
		return
	}
	cfg := pl.cfg.Load()
	if limit, _ := pl.concurrencyLimit(cfg); !pl.shed.acquire(limit) {
		p.metrics.shed.Add(ctx, 1, pl.attrs)
		w.Header().Set("Retry-After", "1")
		writeProblem(w, r, http.StatusServiceUnavailable, "service "+service+" is at its concurrency limit")
		return
	}
	defer pl.shed.release()

	now := p.now()
	in, panicking := pl.pick(now.UnixNano(), nil, p.intn)
	p.notePanic(pl, now, panicking)
	if in == nil {
		p.metrics.unavailable.Add(ctx, 1, pl.attrs)
		w.Header().Set("Retry-After", "1")
		writeProblem(w, r, http.StatusServiceUnavailable, "no ready instance of service "+service)
		return
	}
	pl.budget.request(now)

	f := p.attempt(w, r, pl, in, ro, 1, body)
	if f == nil {
		return
	}
	if ro.Retry && replayable && f.retryable {
		switch next, _ := pl.pick(p.now().UnixNano(), in, p.intn); {
		case next == nil:
			p.metrics.retries.Add(ctx, 1, pl.retryAttrs["no_other_instance"])
		case !pl.budget.retry(p.now()):
			p.metrics.retries.Add(ctx, 1, pl.retryAttrs["budget_exhausted"])
		default:
			p.metrics.retries.Add(ctx, 1, pl.retryAttrs["sent"])
			if f = p.attempt(w, r, pl, next, ro, 2, body); f == nil {
				return
			}
		}
	}
	f.write(w, r)
}

func (ro RouteOptions) withDefaults() RouteOptions {
	if ro.ConnectTimeout <= 0 {
		ro.ConnectTimeout = defaultConnectTimeout
	}
	if ro.ResponseTimeout <= 0 {
		ro.ResponseTimeout = defaultResponseTimeout
	}
	return ro
}

// attempt is one try of a request on one instance. The reverse proxy's hooks find it in
// the request's context.
type attempt struct {
	in      *instance
	connect time.Duration
	timer   *time.Timer // the response timeout; stopped when the headers arrive
	headers time.Time   // when the response headers arrived
	err     error       // what the reverse proxy reported, nil when the response was sent
	status  int         // the status passed on, once the response headers arrived
	w       streamWriter
}

// streamWriter is the client's ResponseWriter as the reverse proxy writes an answer to it.
// For an answer of unknown length it moves the connection's write deadline forward at each
// write (Options.StreamIdle), so that the server's write timeout, meant for a whole JSON
// answer, does not cut a stream that keeps moving. Other answers keep the server's deadline
// and pay nothing.
type streamWriter struct {
	http.ResponseWriter
	idle time.Duration // 0: not a stream
	now  func() time.Time
	rc   *http.ResponseController
}

func (s *streamWriter) Write(p []byte) (int, error) {
	if s.idle > 0 {
		_ = s.rc.SetWriteDeadline(s.now().Add(s.idle)) // unsupported: the server's deadline stands
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the server's writer: Flush, and Hijack for an
// upgrade.
func (s *streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// stream marks the answer as a stream.
func (s *streamWriter) stream(idle time.Duration, now func() time.Time) {
	s.idle, s.now, s.rc = idle, now, http.NewResponseController(s.ResponseWriter)
}

type attemptKey struct{}

func attemptOf(r *http.Request) *attempt {
	a, _ := r.Context().Value(attemptKey{}).(*attempt)
	return a
}

// failure is an attempt that ended before the upstream responded: nothing was written to the
// client yet.
type failure struct {
	status    int // 502, 504, or 499 when the client went away
	detail    string
	instance  string
	retryable bool // a connection failure or a timeout, the client still waiting
}

// attempt proxies r to in and returns nil when the response (complete or cut short by the
// upstream) went to the client, or the failure that left w untouched.
func (p *Pools) attempt(w http.ResponseWriter, r *http.Request, pl *pool, in *instance, ro RouteOptions, n int, body []byte) *failure {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	ctx, span := p.tracer.Start(ctx, "upstream "+pl.name, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	if span.IsRecording() { // attributes cost allocations that a no-op tracer would discard
		span.SetAttributes(
			attribute.String("boxoffice.upstream.service", pl.name),
			attribute.String("boxoffice.upstream.instance", in.key),
			attribute.Int("boxoffice.upstream.attempt", n),
			attribute.String("http.request.method", r.Method),
		)
	}

	a := &attempt{in: in, connect: ro.ConnectTimeout}
	out := r.WithContext(context.WithValue(ctx, attemptKey{}, a))
	var cb *clientBody // the client's body, streamed: its failures are the client's
	switch {
	case body != nil:
		// Sent again from memory, with its length now known.
		out.Body, out.ContentLength, out.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	case r.Body != nil && r.Body != http.NoBody:
		cb = &clientBody{body: r.Body, ctx: ctx}
		out.Body = cb
	}
	a.timer = time.AfterFunc(ro.ResponseTimeout, func() {
		if cb != nil && cb.stall() {
			unblock(w)
		}
		cancel(errResponseTimeout)
	})
	defer a.timer.Stop()

	start := p.now()
	if !in.routable(start.UnixNano()) {
		p.metrics.panicRouted.Add(ctx, 1, pl.attrs) // picked only because the service is in panic
	}
	in.inFlight.Add(1)
	outcome := "aborted" // unless ServeHTTP returns: the upstream cut its body short
	defer func() {
		in.inFlight.Add(-1)
		opt := in.outcomes[outcome]
		p.metrics.requests.Add(ctx, 1, opt)
		end := p.now()
		p.metrics.duration.Record(ctx, end.Sub(start).Seconds(), pl.attrs)
		if al := pl.adaptive.Load(); al != nil {
			p.adapt(al, pl, a, outcome, start, end)
		}
	}()

	a.w.ResponseWriter = w
	p.proxy.ServeHTTP(&a.w, out)

	if a.err == nil {
		outcome = statusClass(a.status)
		span.SetAttributes(attribute.Int("http.response.status_code", a.status))
		return nil
	}
	f := &failure{instance: in.key}
	if err := cb.failure(); err != nil {
		// The client's body failed, not the instance: no ejection, no retry, no word to
		// the adaptive limit.
		f.status, f.detail = clientBodyAnswer(r.Context(), err, cb.stalled.Load())
		outcome = outcomeClientBody
		span.RecordError(err)
		span.SetStatus(codes.Error, outcome)
		return f
	}
	switch kind := classify(r.Context(), ctx, a.err); kind {
	case "canceled":
		// The client went away: not the instance's fault, and nobody to answer.
		f.status, f.detail = statusClientClosed, "client closed the request"
		outcome = kind
		span.SetStatus(codes.Error, kind)
		return f
	case "timeout":
		f.status, f.detail = http.StatusGatewayTimeout, "service "+pl.name+" did not answer in time"
		outcome = kind
	default:
		f.status, f.detail = http.StatusBadGateway, "service "+pl.name+" could not be reached"
		outcome = kind
	}
	f.retryable = true
	span.RecordError(a.err)
	span.SetStatus(codes.Error, outcome)
	if d := in.failed(p.now(), pl.cfg.Load()); d > 0 {
		p.metrics.ejections.Add(ctx, 1, pl.attrs)
		p.log.Warn("upstream instance ejected", "service", pl.name, "instance", in.key, "for", d, "error", a.err)
	}
	return f
}

// adapt tells a service's adaptive limit how one attempt went. A dead or broken instance
// (a connection that failed, timed out or broke off) is ejection's business, not the
// service's load. A client that gave up says something only when it waited past the
// target: a service slower than its clients' patience must still cut its limit, even if it
// never reaches the response timeout. A client whose body failed (over the cap, too slow,
// cut off) says nothing: the service never had the whole request to answer.
func (p *Pools) adapt(al *adaptiveLimit, pl *pool, a *attempt, outcome string, start, end time.Time) {
	latency := end.Sub(start)
	if !a.headers.IsZero() {
		latency = a.headers.Sub(start) // a slow client's download is not the service's
	}
	switch {
	case outcome == "connect_error", outcome == "error", outcome == outcomeClientBody, dialFailed(a.err):
		return
	case outcome == "canceled" && latency <= al.latencyTarget():
		return
	}
	overloaded := outcome == "timeout" || a.status == http.StatusServiceUnavailable
	al.observe(start, end, latency, overloaded, pl.shed.inFlight())
}

// dialFailed reports whether err is a failure to connect, a connect timeout included.
func dialFailed(err error) bool {
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "dial"
}

// classify names why an attempt failed: canceled (the client left), timeout, connect_error
// (the instance could not be reached) or error (it broke off before responding).
func classify(client, attemptCtx context.Context, err error) string {
	var ne net.Error
	var op *net.OpError
	switch {
	case client.Err() != nil:
		return "canceled"
	case errors.Is(err, errResponseTimeout), errors.Is(context.Cause(attemptCtx), errResponseTimeout):
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &op) && op.Op == "dial":
		return "connect_error"
	}
	return "error"
}

// write answers the client for a failure no retry repaired.
func (f *failure) write(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(HeaderUpstream, f.instance)
	if f.status == statusClientClosed {
		w.WriteHeader(f.status) // nginx's "client closed request", for the access log
		return
	}
	writeProblem(w, r, f.status, f.detail)
}

// writeProblem answers with an application/problem+json body that names the trace. A 4xx
// (the client's body) has code invalid, as the gateway's own 413 has; a 5xx unavailable.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	code := problem.Unavailable
	if status < http.StatusInternalServerError {
		code = problem.Invalid
	}
	d := problem.Details{
		Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail,
		Instance: r.URL.Path, Code: code,
	}
	if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
		d.TraceID = sc.TraceID().String()
	}
	problem.WriteDetails(w, status, d)
}

// writeBodyError answers a request whose body could not be read into memory for a retry,
// as an attempt answers one whose streamed body failed.
func writeBodyError(w http.ResponseWriter, r *http.Request, err error) {
	status, detail := clientBodyAnswer(r.Context(), err, false)
	if status == statusClientClosed {
		w.WriteHeader(status)
		return
	}
	writeProblem(w, r, status, detail)
}

// replayBody reads r's body into memory when a retry may have to send it again. It returns
// nil and true when there is no body, and false when the body is too large to keep: the part
// read is put back in front of the rest, and the request goes out once.
func replayBody(r *http.Request, retry bool) ([]byte, bool, error) {
	if !retry || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, true, nil
	}
	if r.ContentLength > maxReplayBody {
		return nil, false, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxReplayBody+1))
	if err != nil {
		return nil, false, fmt.Errorf("read request body: %w", err)
	}
	if len(b) > maxReplayBody {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
		return nil, false, nil
	}
	r.Body.Close()
	return b, true, nil
}

// newReverseProxy builds the one httputil.ReverseProxy all pools share. Its hooks read the
// attempt from the request context: which instance, and where to report the outcome.
func (p *Pools) newReverseProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			a := attemptOf(pr.In)
			pr.SetURL(a.in.url)
			// Keep the chain of proxies before this one, and add the client's address.
			pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			pr.SetXForwarded()
			propagator.Inject(pr.Out.Context(), propagation.HeaderCarrier(pr.Out.Header))
		},
		Transport:  p.transport,
		BufferPool: &bufferPool{},
		ErrorLog:   slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		ModifyResponse: func(res *http.Response) error {
			a := attemptOf(res.Request)
			if !a.timer.Stop() {
				res.Body.Close()
				return errResponseTimeout // the headers came as the timeout fired
			}
			a.status, a.headers = res.StatusCode, p.now()
			if res.ContentLength < 0 && res.StatusCode != http.StatusSwitchingProtocols {
				a.w.stream(p.streamIdle, p.wallNow)
			}
			a.in.succeeded()
			res.Header.Set(HeaderUpstream, a.in.key)
			return nil
		},
		ErrorHandler: func(_ http.ResponseWriter, r *http.Request, err error) {
			attemptOf(r).err = err
		},
	}
}

// newTransport is the default Transport: connect timeout per route (from the request
// context), enough idle connections per instance that a busy gateway does not reconnect all
// the time (the standard library keeps 2), no proxy from the environment, and no transparent
// gzip, which would make the gateway decompress what the client should receive as sent.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:           dial,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

type connectTimeoutKey struct{}

// withConnectTimeout sets the connect timeout the default transport's dial uses for
// requests made with ctx.
func withConnectTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, connectTimeoutKey{}, d)
}

// dial connects with the timeout of the request's route or probe.
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: defaultConnectTimeout, KeepAlive: 30 * time.Second}
	if a, ok := ctx.Value(attemptKey{}).(*attempt); ok {
		d.Timeout = a.connect
	} else if t, ok := ctx.Value(connectTimeoutKey{}).(time.Duration); ok && t > 0 {
		d.Timeout = t
	}
	return d.DialContext(ctx, network, addr)
}

// bufferPool lends the reverse proxy its 32 KiB copy buffers, so that a response does not
// allocate one.
type bufferPool struct{ pool sync.Pool }

var _ httputil.BufferPool = (*bufferPool)(nil)

func (b *bufferPool) Get() []byte {
	if v, ok := b.pool.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.pool.Put(&buf) }
