package gateway

import (
	"errors"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/gateway/graphqlop"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// handler is the public pipeline, in the blueprint's order. The access log and the metrics
// (step 9) wrap the steps after them so they see every answer, the gateway's own included.
func (g *gateway) handler() http.Handler {
	if g.local == nil {
		g.local = ratelimit.NewMemory(g.now)
	}
	if g.persisted == nil {
		g.persisted = graphqlop.NewPersisted(graphqlop.MaxPersisted)
	}
	steps := []func(http.Handler) http.Handler{
		g.requestID,     // 1. request id + trace context
		g.observe,       // 9. RED metrics and the access log, around everything below
		g.limitBody,     // 1. body size limit
		g.findClientIP,  // 2. client IP, X-Forwarded-For only through trusted proxies
		g.limitLocally,  // 2. a flood from one address cut in memory, before any round trip
		g.serveIndex,    //    GET / answered with the index, unless the policy routes "/"
		g.matchRoute,    // 3. path normalised, then method + pattern → route
		g.authenticate,  // 4. identity headers stripped, credentials verified, identity set
		g.readOperation, //    a GraphQL route's operation read, persisted queries resolved, cost weighed
		g.rateLimit,     // 5. every rule in one limiter call; 429 / 503; budget headers
	}
	h := http.HandlerFunc(g.forward) // 6–8. shedding, balancing, timeouts, retry
	var next http.Handler = h
	for i := len(steps) - 1; i >= 0; i-- {
		next = steps[i](next)
	}
	return next
}

// validRequestID reports whether a client-supplied X-Request-Id may be kept: 1 to 64 of
// A-Z, a-z, 0-9, '.', '_' and '-'. (A loop rather than a regular expression: it runs on
// every request.)
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// traceIDOf is the trace id of r's context, as the access log and problem bodies show it.
func traceIDOf(r *http.Request) string {
	return trace.SpanContextFromContext(r.Context()).TraceID().String()
}

// requestID starts the request's exchange with the policy snapshot in force, and gives the
// request a trace context and an id. A request that arrives without trace context (and the
// process has no tracer to start one) gets fresh random ids, so the trace id in the access
// log, in the 429 body and in the traceparent sent upstream is always the same real one.
// X-Request-Id is kept when the client sent a sane one, else it is the trace id.
func (g *gateway) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			tid, sid := g.newTrace()
			sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
			ctx = trace.ContextWithSpanContext(ctx, sc)
		}
		ex := &exchange{start: g.now(), snap: g.live.Current(), id: r.Header.Get("X-Request-Id")}
		if !validRequestID(ex.id) {
			ex.id = sc.TraceID().String()
		}
		// One slice for both: neither header is appended to, and a Set would allocate twice.
		id := []string{ex.id}
		r.Header["X-Request-Id"], w.Header()["X-Request-Id"] = id, id
		next.ServeHTTP(w, r.WithContext(withExchange(ctx, ex)))
	})
}

// limitBody caps the request body at the policy's max_body_bytes: a declared length over it
// is refused at once, and an undeclared one fails when the upstream call reads past it
// (the upstream layer answers 413), which the exchange notes so that it counts as the
// gateway's rejection, not the service's answer.
func (g *gateway) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := exchangeOf(r)
		n := ex.snap.Policy.Settings.MaxBodyBytes
		if r.ContentLength > n {
			ex.outcome = outcomeTooLarge
			writeStatus(w, r, http.StatusRequestEntityTooLarge, "request body is larger than "+strconv.FormatInt(n, 10)+" bytes")
			return
		}
		ex.body.ReadCloser = http.MaxBytesReader(w, r.Body, n)
		r.Body = &ex.body
		next.ServeHTTP(w, r)
	})
}

// cappedBody is a request body behind http.MaxBytesReader that remembers running past its
// cap. The transport may read it on a goroutine of its own, hence the atomic.
type cappedBody struct {
	io.ReadCloser
	over atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		b.over.Store(true)
	}
	return n, err
}

// findClientIP finds the client's address, and leaves in X-Forwarded-For only the hops the
// gateway trusts, from the client to the last trusted proxy; none when the peer is not one.
// The upstream layer forwards that and appends the peer, so a service reads the client the
// gateway's per-IP limits counted, never a chain the client made up.
func (g *gateway) findClientIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, chain := g.clientIP.Resolve(r)
		exchangeOf(r).ip = ip
		if len(chain) == 0 {
			r.Header.Del("X-Forwarded-For")
		} else {
			r.Header["X-Forwarded-For"] = []string{strings.Join(chain, ", ")}
		}
		next.ServeHTTP(w, r)
	})
}

// limitLocally is the pre-limit: settings.local_ip_limit per client address, decided in
// this replica's memory before anything that costs a round trip — the route's limits in
// Redis, or the JWKS refetch a forged token may cause — so that a flood from one address is
// cut at the price of a map lookup. Over it, the 429 of any limit, naming local-per-ip. With
// N replicas an address may pass N times the rate: the pre-limit is a ceiling against
// floods, not a budget, and the shared limits after it stay exact.
//
// Loopback clients are not counted: in the all-in-one mode every simulated fan of the
// playground is 127.0.0.1, and a process on the gateway's own machine is no remote flood.
func (g *gateway) limitLocally(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := exchangeOf(r)
		rule, on := ex.snap.LocalIPLimit()
		if !on || !ex.ip.IsValid() || ex.ip.IsLoopback() {
			next.ServeHTTP(w, r)
			return
		}
		reqs := []ratelimit.Request{{Rule: rule, Key: limits.IPKey(ex.ip)}}
		res, err := g.local.Allow(r.Context(), reqs)
		if err != nil { // the rule was validated with the policy: not expected
			ex.outcome = outcomeInvalidPolicy
			problem.Write(w, r, g.log, err)
			return
		}
		g.metrics.locallyDecided(r.Context(), res)
		if res.Allowed {
			next.ServeHTTP(w, r)
			return
		}
		ex.reqs, ex.result = reqs, res
		ex.outcome = outcomeRateLimited
		limits.WriteTooMany(w, reqs, res, traceIDOf(r))
	})
}

// matchRoute normalises the path, then finds the route. The path the route was matched on
// is the very path sent upstream (RawPath is dropped): "/v1/public/%2e%2e/admin" is matched,
// and forwarded, as "/v1/admin", so no spelling of a path reaches a service past the auth of
// the route it really is. Encoded slashes and backslashes are refused: services would read
// them as separators where the gateway did not.
func (g *gateway) matchRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := exchangeOf(r)
		p, ok := normalise(r)
		if !ok {
			ex.outcome = outcomeBadPath
			problem.Write(w, r, nil, problem.New(problem.Invalid, "malformed path"))
			return
		}
		rt, allowed := ex.snap.Match(r.Method, p)
		switch {
		case rt == nil && len(allowed) > 0:
			ex.outcome = outcomeMethod
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			writeStatus(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed here")
			return
		case rt == nil:
			ex.outcome = outcomeNoRoute
			problem.Write(w, r, nil, problem.New(problem.NotFound, "no route for %s %s", r.Method, p))
			return
		}
		ex.route = rt
		if rt.StripPrefix != "" {
			p = "/" + strings.TrimPrefix(strings.TrimPrefix(p, rt.StripPrefix), "/")
		}
		r.URL.Path, r.URL.RawPath = p, ""
		next.ServeHTTP(w, r)
	})
}

// normalise returns the cleaned, decoded path of r, or false when it cannot be trusted.
func normalise(r *http.Request) (string, bool) {
	raw := strings.ToLower(r.URL.EscapedPath())
	if strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") || strings.Contains(raw, "%00") {
		return "", false
	}
	p := r.URL.Path
	if p == "" || p[0] != '/' || strings.ContainsAny(p, "\\\x00") {
		return "", false
	}
	return path.Clean(p), true
}

// authenticate strips identity headers the client sent, and any mention of the gateway's
// own headers in Connection, verifies the route's credentials, checks the route's plans and
// sets the verified identity for the upstream.
func (g *gateway) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := exchangeOf(r)
		keepGatewayHeaders(r.Header)
		c, err := g.auth.Authenticate(r.Context(), r, ex.route.Auth)
		if err != nil {
			switch problem.CodeOf(err) {
			case problem.Unauthorized:
				ex.outcome = outcomeUnauthorized
				w.Header().Set("WWW-Authenticate", challenge(ex.route.Auth))
			case problem.Unavailable:
				ex.outcome = outcomeAuthDown
			}
			problem.Write(w, r, g.log, err)
			return
		}
		ex.caller = c
		if len(ex.route.Plans) > 0 && !slices.Contains(ex.route.Plans, c.Plan) {
			ex.outcome = outcomeForbidden
			problem.Write(w, r, nil, problem.New(problem.Forbidden, "this route is for the %s plan", strings.Join(ex.route.Plans, ", ")))
			return
		}
		c.Identity.Set(r.Header)
		next.ServeHTTP(w, r)
	})
}

// setByGateway holds, lower-cased, the request headers the gateway sets for the upstream
// itself: the verified identity, the request id, the trace context (W3C traceparent,
// tracestate and baggage) and the forwarding headers.
var setByGateway = func() map[string]bool {
	m := map[string]bool{"x-request-id": true, "traceparent": true, "tracestate": true, "baggage": true,
		"forwarded": true, "x-forwarded-for": true, "x-forwarded-host": true, "x-forwarded-proto": true}
	for _, h := range identity.Headers {
		m[strings.ToLower(h)] = true
	}
	return m
}()

// keepGatewayHeaders drops from the Connection header every name of a header the gateway
// sets. The reverse proxy removes the headers Connection names, as hop-by-hop ones, after
// the gateway has set them: "Connection: X-Boxoffice-User" would otherwise let a client
// send its request upstream without the identity the gateway verified. The other names
// stay, so the client's own hop-by-hop headers are still not forwarded.
func keepGatewayHeaders(h http.Header) {
	lines := h["Connection"]
	if len(lines) == 0 {
		return
	}
	var kept []string
	for _, line := range lines {
		for name := range strings.SplitSeq(line, ",") {
			name = strings.TrimSpace(name)
			if name != "" && !setByGateway[strings.ToLower(name)] {
				kept = append(kept, name)
			}
		}
	}
	if len(kept) == 0 {
		h.Del("Connection")
		return
	}
	h["Connection"] = []string{strings.Join(kept, ", ")}
}

func challenge(mode policy.AuthMode) string {
	if mode == policy.AuthAPIKey {
		return `ApiKey realm="boxoffice", header="X-Api-Key"`
	}
	return `Bearer realm="boxoffice"`
}

// rateLimit decides every limit of the request in one limiter call. Denied: 429 with the
// RateLimit fields, or 503 when a fail-closed rule cannot reach the store. Allowed: the
// budget fields on the response, and after it the slots released and response costs
// charged, even when the response ends in a panic. Shadow rules that would have denied are
// only noted for the access log.
func (g *gateway) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := exchangeOf(r)
		built, err := limits.Build(ex.snap, limits.Subject{Route: ex.route, Caller: ex.caller, IP: ex.ip, Request: r, Operation: ex.op})
		if err != nil { // a GraphQL mutation the policy does not map
			ex.outcome = outcomeBadOperation
			problem.Write(w, r, nil, err)
			return
		}
		reqs := built.Requests
		res, err := g.enforcer.Decide(r.Context(), reqs)
		if err != nil {
			ex.outcome = outcomeInvalidPolicy
			problem.Write(w, r, g.log, err)
			return
		}
		ex.reqs, ex.result = reqs, res
		for _, d := range res.Rules {
			if d.Mode == ratelimit.Shadow && !d.Allowed {
				ex.shadow = append(ex.shadow, d.Rule)
			}
		}
		cost := limits.CostOf(built, res)
		switch {
		case !res.Allowed && limits.FailedClosed(res):
			ex.outcome = outcomeStoreDown
			limits.WriteStoreUnavailable(w, res, traceIDOf(r))
			return
		case !res.Allowed && ex.op != nil:
			ex.outcome = outcomeRateLimited
			limits.WriteTooManyGraphQL(w, reqs, res, cost, traceIDOf(r))
			return
		case !res.Allowed:
			ex.outcome = outcomeRateLimited
			limits.WriteTooMany(w, reqs, res, traceIDOf(r))
			return
		}
		setQueryCost(r.Header, cost)
		limits.SetHeaders(w.Header(), reqs, res)
		// Deferred: a client that hangs up mid-body makes the reverse proxy panic
		// (http.ErrAbortHandler), and its slots and costs must be settled all the same.
		defer g.enforcer.Settle(r.Context(), res, built.Charges, w.Header(), nil)
		next.ServeHTTP(w, r)
	})
}

// forward hands the request to the upstream layer with the route's knobs. A retry is allowed
// for idempotent methods and for requests carrying an Idempotency-Key, whose service
// promises to apply them once however often they arrive.
func (g *gateway) forward(w http.ResponseWriter, r *http.Request) {
	rt := exchangeOf(r).route
	ro := upstream.RouteOptions{ConnectTimeout: rt.ConnectTimeout, ResponseTimeout: rt.ResponseTimeout}
	ro.Retry = rt.Retry && (idempotent(r.Method) || r.Header.Get("Idempotency-Key") != "")
	g.upstream.Forward(w, r, rt.Service, ro)
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// writeStatus answers a problem whose status has no problem.Code of its own (405, 413).
func writeStatus(w http.ResponseWriter, r *http.Request, status int, detail string) {
	d := problem.Details{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail,
		Instance: r.URL.Path, Code: problem.Invalid, TraceID: traceIDOf(r)}
	problem.WriteDetails(w, status, d)
}
