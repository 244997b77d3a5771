package gateway

import (
	"errors"
	"io"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/graphqlop"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// handler is the public pipeline: the request id, then serve, whose answer observe records
// whatever it is, the gateway's own included (step 9).
func (g *gateway) handler() http.Handler {
	if g.local == nil {
		g.local = ratelimit.NewMemory(clock.Func(g.now))
	}
	if g.persisted == nil {
		g.persisted = graphqlop.NewPersisted(graphqlop.MaxPersisted)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, id := g.requestID(w, r) // 1. request id + trace context
		ex := &exchange{start: g.now(), id: id}
		rec := &recorder{ResponseWriter: w}
		defer g.observe(rec, r, ex) // 9. RED metrics and the access log, panics included
		g.serve(rec, r, ex)
	})
}

// serve runs the steps of the blueprint (design §5) on one request, in its order. Each step
// gets what it needs as arguments, and returns what it learnt and an outcome: proceed, or why
// it answered the request itself, which ends it. ex records both for observe. Steps 6 to 8
// are the upstream layer's (g.forward).
func (g *gateway) serve(w http.ResponseWriter, r *http.Request, ex *exchange) {
	snap := g.live.Current() // the one policy every step of this request reads
	// 1. body size limit
	if ex.outcome = g.limitBody(w, r, snap.Policy.Settings.MaxBodyBytes, &ex.body); ex.outcome != proceed {
		return
	}
	// 2. client IP, X-Forwarded-For only through trusted proxies; a flood from one address
	// cut in memory, before any round trip
	ex.ip = g.findClientIP(r)
	if ex.limit, ex.outcome = g.limitLocally(w, r, snap, ex.ip); ex.outcome != proceed {
		return
	}
	// GET / answered with the index, unless the policy routes "/"
	if ex.outcome = g.serveIndex(w, r, snap); ex.outcome != proceed {
		return
	}
	// 3. path normalised, then method + pattern → route
	if ex.route, ex.outcome = g.matchRoute(w, r, snap); ex.outcome != proceed {
		return
	}
	// 4. identity headers stripped, credentials verified, identity set
	if ex.caller, ex.outcome = g.authenticate(w, r, ex.route); ex.outcome != proceed {
		return
	}
	// a GraphQL route's operation read, persisted queries resolved, cost weighed
	op, out := g.readOperation(w, r, ex.route)
	if ex.outcome = out; ex.outcome != proceed {
		return
	}
	// 5. every rule in one limiter call; 429 / 503; budget headers
	s := limits.Subject{Route: ex.route, Caller: ex.caller, IP: ex.ip, Request: r, Operation: op}
	if ex.limit, ex.outcome = g.rateLimit(w, r, snap, s); ex.outcome != proceed {
		return
	}
	// Deferred: a client that hangs up mid-body makes the reverse proxy panic
	// (http.ErrAbortHandler), and the slots and costs must be settled all the same.
	defer g.enforcer.Settle(r.Context(), ex.limit.result, ex.limit.charges, w.Header(), nil)
	// a shaping limit's queue: the request waits the turn its decision reserved
	if ex.outcome = g.waitTurn(w, r, ex.limit.result.Delay); ex.outcome != proceed {
		return
	}
	g.forward(w, r, ex.route) // 6–8. shedding, balancing, timeouts, retry
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

// requestID gives the request a trace context and an id, and returns the request with that
// context and the id. A request that arrives without trace context (and the process has no
// tracer to start one) gets fresh random ids, so the trace id in the access log, in the 429
// body and in the traceparent sent upstream is always the same real one. X-Request-Id is
// kept when the client sent a sane one, else it is the trace id; it is set on the request
// and the response.
func (g *gateway) requestID(w http.ResponseWriter, r *http.Request) (*http.Request, string) {
	sc := trace.SpanContextFromContext(r.Context())
	if !sc.IsValid() {
		tid, sid := g.newTrace()
		sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
		r = r.WithContext(trace.ContextWithSpanContext(r.Context(), sc))
	}
	id := r.Header.Get("X-Request-Id")
	if !validRequestID(id) {
		id = sc.TraceID().String()
	}
	// One slice for both: neither header is appended to, and a Set would allocate twice.
	ids := []string{id}
	r.Header["X-Request-Id"], w.Header()["X-Request-Id"] = ids, ids
	return r, id
}

// limitBody caps the request body at maxBytes (the policy's max_body_bytes): a declared
// length over it is answered with 413 at once, and an undeclared one fails when the upstream
// call reads past it (the upstream layer answers 413). body is where the capped body is kept
// (the exchange's, to spare an allocation): it notes running past the cap, so that observe
// counts that 413 as the gateway's rejection, not the service's answer.
func (g *gateway) limitBody(w http.ResponseWriter, r *http.Request, maxBytes int64, body *cappedBody) outcome {
	if r.ContentLength > maxBytes {
		writeStatus(w, r, http.StatusRequestEntityTooLarge, "request body is larger than "+strconv.FormatInt(maxBytes, 10)+" bytes")
		return outcomeTooLarge
	}
	body.ReadCloser = http.MaxBytesReader(w, r.Body, maxBytes)
	r.Body = body
	return proceed
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

// findClientIP returns the client's address, and leaves in X-Forwarded-For only the hops the
// gateway trusts, from the client to the last trusted proxy; none when the peer is not one.
// The upstream layer forwards that and appends the peer, so a service reads the client the
// gateway's per-IP limits counted, never a chain the client made up.
func (g *gateway) findClientIP(r *http.Request) netip.Addr {
	ip, chain := g.clientIP.Resolve(r)
	if len(chain) == 0 {
		r.Header.Del("X-Forwarded-For")
	} else {
		r.Header["X-Forwarded-For"] = []string{strings.Join(chain, ", ")}
	}
	return ip
}

// limitLocally is the pre-limit: settings.local_ip_limit per client address, decided in this
// replica's memory before anything that costs a round trip (Redis, a JWKS refetch), so a
// flood from one address is cut at the price of a map lookup; over it, the 429 of any limit
// naming local-per-ip. Per replica, so a ceiling against floods, not a budget; loopback is
// not counted. See docs/lessons/rate-limiting.md, "The pre-limit: a flood cut in memory".
func (g *gateway) limitLocally(w http.ResponseWriter, r *http.Request, snap *policy.Snapshot, ip netip.Addr) (decision, outcome) {
	rule, on := snap.LocalIPLimit()
	if !on || !ip.IsValid() || ip.IsLoopback() {
		return decision{}, proceed
	}
	reqs := []ratelimit.Request{{Rule: rule, Key: limits.IPKey(ip)}}
	res, err := g.local.Allow(r.Context(), reqs)
	if err != nil { // the rule was validated with the policy: not expected
		problem.Write(w, r, g.log, err)
		return decision{}, outcomeInvalidPolicy
	}
	g.metrics.locallyDecided(r.Context(), res)
	if res.Allowed {
		return decision{}, proceed
	}
	limits.WriteTooMany(w, reqs, res, traceIDOf(r))
	return decision{reqs: reqs, result: res}, outcomeRateLimited
}

// matchRoute normalises the path, then finds the route. The path the route was matched on
// is the very path sent upstream (RawPath is dropped): "/v1/public/%2e%2e/admin" is matched,
// and forwarded, as "/v1/admin", so no spelling of a path reaches a service past the auth of
// the route it really is. Encoded slashes and backslashes are refused: services would read
// them as separators where the gateway did not.
func (g *gateway) matchRoute(w http.ResponseWriter, r *http.Request, snap *policy.Snapshot) (*policy.CompiledRoute, outcome) {
	p, ok := normalise(r)
	if !ok {
		problem.Write(w, r, nil, problem.New(problem.Invalid, "malformed path"))
		return nil, outcomeBadPath
	}
	rt, allowed := snap.Match(r.Method, p)
	switch {
	case rt == nil && len(allowed) > 0:
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeStatus(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed here")
		return nil, outcomeMethod
	case rt == nil:
		problem.Write(w, r, nil, problem.New(problem.NotFound, "no route for %s %s", r.Method, p))
		return nil, outcomeNoRoute
	}
	if rt.StripPrefix != "" {
		p = "/" + strings.TrimPrefix(strings.TrimPrefix(p, rt.StripPrefix), "/")
	}
	r.URL.Path, r.URL.RawPath = p, ""
	return rt, proceed
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
// own headers in Connection, verifies the credentials rt asks for, checks rt's plans and
// sets the verified identity for the upstream. It returns the caller, also when its plan is
// refused (403), for the access log.
func (g *gateway) authenticate(w http.ResponseWriter, r *http.Request, rt *policy.CompiledRoute) (authn.Caller, outcome) {
	keepGatewayHeaders(r.Header)
	c, err := g.auth.Authenticate(r.Context(), r, rt.Auth)
	if err != nil {
		var out outcome = outcomeInvalidPolicy // an auth mode the policy's validation let through
		switch problem.CodeOf(err) {
		case problem.Unauthorized:
			out = outcomeUnauthorized
			w.Header().Set("WWW-Authenticate", challenge(rt.Auth))
		case problem.Unavailable:
			out = outcomeAuthDown
		}
		problem.Write(w, r, g.log, err)
		return c, out
	}
	if len(rt.Plans) > 0 && !slices.Contains(rt.Plans, c.Plan) {
		problem.Write(w, r, nil, problem.New(problem.Forbidden, "this route is for the %s plan", strings.Join(rt.Plans, ", ")))
		return c, outcomeForbidden
	}
	c.Identity.Set(r.Header)
	return c, proceed
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

// rateLimit decides every limit of the request s describes in one limiter call. Denied: 429
// with the RateLimit fields, or 503 when a fail-closed rule cannot reach the store. Allowed:
// the budget fields on the response, and the decision, whose slots and response costs the
// caller settles once the response is done. Shadow rules that would have denied are only
// noted in the decision, for the access log.
func (g *gateway) rateLimit(w http.ResponseWriter, r *http.Request, snap *policy.Snapshot, s limits.Subject) (decision, outcome) {
	built, err := limits.Build(snap, s)
	if err != nil { // a GraphQL mutation the policy does not map
		problem.Write(w, r, nil, err)
		return decision{}, outcomeBadOperation
	}
	reqs := built.Requests
	res, err := g.enforcer.Decide(r.Context(), reqs)
	if err != nil {
		problem.Write(w, r, g.log, err)
		return decision{}, outcomeInvalidPolicy
	}
	d := decision{reqs: reqs, result: res, charges: built.Charges}
	for _, rd := range res.Rules {
		switch {
		case rd.Allowed || rd.Mode != ratelimit.Shadow:
		case rd.Unenforced:
			d.unenforced = append(d.unenforced, rd.Rule)
		default:
			d.shadow = append(d.shadow, rd.Rule)
		}
	}
	cost := limits.CostOf(built, res)
	switch {
	case !res.Allowed && limits.FailedClosed(res):
		limits.WriteStoreUnavailable(w, res, traceIDOf(r))
		return d, outcomeStoreDown
	case !res.Allowed && s.Operation != nil:
		limits.WriteTooManyGraphQL(w, reqs, res, cost, traceIDOf(r))
		return d, outcomeRateLimited
	case !res.Allowed:
		limits.WriteTooMany(w, reqs, res, traceIDOf(r))
		return d, outcomeRateLimited
	}
	setQueryCost(r.Header, cost)
	limits.SetHeaders(w.Header(), reqs, res)
	return d, proceed
}

// forward hands the request to the upstream layer with rt's knobs. A retry is allowed for
// idempotent methods and for requests carrying an Idempotency-Key, whose service promises
// to apply them once however often they arrive.
func (g *gateway) forward(w http.ResponseWriter, r *http.Request, rt *policy.CompiledRoute) {
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
