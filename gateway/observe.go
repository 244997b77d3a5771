package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
)

// metrics are the gateway's RED metrics per route; per-rule decisions are the limiter's,
// per-instance ones the upstream layer's. The series and their labels: docs/run.md, "Metrics".
type metrics struct {
	requests   metric.Int64Counter
	duration   metric.Float64Histogram
	rejections metric.Int64Counter
	attrs      attrSets
	// local counts the pre-limit's decisions (gateway.limitLocally) in the rate limiter's
	// ratelimit_decisions_total: declared with the scope, name and description package
	// ratelimit gives it, it is the same instrument, so every decision is in one series.
	local                     metric.Int64Counter
	localAllowed, localDenied metric.AddOption
}

func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("boxoffice.dev/gateway")
	var ms metrics
	var err, e error
	ms.requests, e = m.Int64Counter("gateway.requests", metric.WithDescription("Requests answered, by route, method and status code."))
	err = errors.Join(err, e)
	ms.duration, e = m.Float64Histogram("gateway.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from the request's arrival to the end of its response, by route and outcome."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	err = errors.Join(err, e)
	ms.rejections, e = m.Int64Counter("gateway.rejections", metric.WithDescription("Requests the gateway answered itself, by route and reason."))
	err = errors.Join(err, e)
	ms.local, e = mp.Meter("boxoffice.dev/gateway/ratelimit").Int64Counter("ratelimit.decisions", metric.WithDescription("Rule decisions by rule, outcome and path."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	local := func(outcome string) metric.AddOption {
		return metric.WithAttributeSet(attribute.NewSet(attribute.String("rule", policy.LocalIPRuleID),
			attribute.String("outcome", outcome), attribute.String("path", string(ratelimit.PathMemory))))
	}
	ms.localAllowed, ms.localDenied = local("allowed"), local("denied")
	return &ms, nil
}

// locallyDecided counts a decision of the pre-limit, which Memory takes on path memory.
func (m *metrics) locallyDecided(ctx context.Context, res ratelimit.Result) {
	if res.Allowed {
		m.local.Add(ctx, 1, m.localAllowed)
	} else {
		m.local.Add(ctx, 1, m.localDenied)
	}
}

// observe records a request once its response is done: the RED metrics and one JSON access
// log line (route, status, duration, upstream, deciding rule, trace id; ids, never
// credentials). rec is the response as the client got it, ex what the pipeline learnt.
// Deferred around the pipeline, it records a panicking request too (outcome client_closed or
// upstream_aborted for http.ErrAbortHandler, else panic; status 499 or 500 if none was sent)
// and lets the panic go on to net/http.
func (g *gateway) observe(rec *recorder, r *http.Request, ex *exchange) {
	if p := recover(); p != nil { // recover works here because defer calls observe itself
		g.record(rec, r, ex, panicOutcome(r, p))
		panic(p) // net/http aborts the connection, and logs any panic but ErrAbortHandler
	}
	g.record(rec, r, ex, proceed)
}

// Outcomes of requests whose handler panicked, for the access log and the duration metric.
// They are not rejections: the gateway did not answer these itself.
const (
	outcomeClientClosed    = "client_closed"
	outcomeUpstreamAborted = "upstream_aborted"
	outcomePanic           = "panic"
)

// panicOutcome names why r's handler panicked with p.
func panicOutcome(r *http.Request, p any) outcome {
	switch {
	case p != http.ErrAbortHandler:
		return outcomePanic
	case r.Context().Err() != nil: // net/http cancels the context when the connection closes
		return outcomeClientClosed
	}
	return outcomeUpstreamAborted
}

// record writes r's metrics and access log line. ended is why the handler panicked, proceed
// when it returned.
func (g *gateway) record(rec *recorder, r *http.Request, ex *exchange, ended outcome) {
	took := g.now().Sub(ex.start)
	status := rec.status
	switch {
	case status != 0:
	case ended == outcomeClientClosed:
		status = statusClientClosed
	case ended != proceed:
		status = http.StatusInternalServerError
	default:
		status = http.StatusOK
	}
	if ex.outcome == proceed && status == http.StatusRequestEntityTooLarge && ex.body.over.Load() {
		ex.outcome = outcomeTooLarge // a streamed body ran past the cap: the gateway's 413
	}
	route, why := "none", ex.outcome
	if ex.route != nil {
		route = ex.route.ID
	}
	if ended != proceed && why == proceed {
		why = ended
	}
	if why == proceed {
		why = "upstream"
	}
	ctx := r.Context()
	m := g.metrics
	m.requests.Add(ctx, 1, m.attrs.get(attrKey{route, "method", method(r.Method), "code", status}))
	m.duration.Record(ctx, took.Seconds(), m.attrs.get(attrKey{route, "outcome", string(why), "", 0}))
	if ex.outcome != proceed && ex.outcome != outcomeIndex && ex.outcome != outcomeQueueLeft { // the client left: no answer
		m.rejections.Add(ctx, 1, m.attrs.get(attrKey{route, "reason", string(ex.outcome), "", 0}))
	}
	if !g.log.Enabled(ctx, slog.LevelInfo) {
		return // the attributes below cost a dozen allocations for a line nobody reads
	}
	attrs := []slog.Attr{
		slog.String("request_id", ex.id),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
		slog.Int64("bytes", rec.bytes),
		slog.String("outcome", string(why)),
		slog.String("ip", ex.ip.String()),
	}
	if u := rec.Header().Get(upstream.HeaderUpstream); u != "" {
		attrs = append(attrs, slog.String("upstream", u))
	}
	if ex.caller.User != "" {
		attrs = append(attrs, slog.String("user", ex.caller.User))
	}
	if ex.caller.Tenant != "" {
		attrs = append(attrs, slog.String("tenant", ex.caller.Tenant), slog.String("api_key_id", ex.caller.KeyID))
	}
	if res := ex.limit.result; len(ex.limit.reqs) > 0 {
		attrs = append(attrs, slog.String("rule", res.Rule), slog.String("decision", string(res.Path)), slog.Int("remaining", res.Remaining))
		if res.Allowed && res.Delay > 0 {
			attrs = append(attrs, slog.Float64("queued_ms", float64(res.Delay.Microseconds())/1000))
		}
	}
	if len(ex.limit.shadow) > 0 {
		attrs = append(attrs, slog.Any("shadow_denied", ex.limit.shadow))
	}
	if len(ex.limit.unenforced) > 0 {
		attrs = append(attrs, slog.Any("unenforced_denied", ex.limit.unenforced))
	}
	g.log.LogAttrs(ctx, slog.LevelInfo, "access", attrs...)
}

// statusClientClosed is nginx's "client closed request", logged for a request that ended
// before any status was written.
const statusClientClosed = 499

// attrSets keeps the attribute sets of the metrics' label combinations, built once each:
// building a set sorts and hashes its attributes and allocates, several times per request
// otherwise. The combinations are bounded by the policy's route ids, the standard methods,
// status codes and outcomes; past maxAttrSets (a policy far larger than any real one) sets
// are built per request and not kept, so memory stays bounded whatever clients send.
// Safe for concurrent use; lookups share a read lock.
type attrSets struct {
	mu sync.RWMutex
	m  map[attrKey]metric.MeasurementOption
}

// maxAttrSets bounds attrSets.
const maxAttrSets = 4096

// attrKey is one label combination: route plus one or two more labels; code, when named, is
// the status code.
type attrKey struct {
	route       string
	name, value string
	codeName    string
	code        int
}

func (a *attrSets) get(k attrKey) metric.MeasurementOption {
	a.mu.RLock()
	o, ok := a.m[k]
	a.mu.RUnlock()
	if ok {
		return o
	}
	kv := []attribute.KeyValue{attribute.String("route", k.route), attribute.String(k.name, k.value)}
	if k.codeName != "" {
		kv = append(kv, attribute.String(k.codeName, strconv.Itoa(k.code)))
	}
	o = metric.WithAttributeSet(attribute.NewSet(kv...))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[attrKey]metric.MeasurementOption)
	}
	if len(a.m) < maxAttrSets {
		a.m[k] = o
	}
	return o
}

// method bounds the method label to the standard methods, so that made-up methods cannot
// grow the metric's series.
func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// recorder notes the status and size of a response. Unwrap lets http.ResponseController
// reach the connection's Flush, so streamed responses stay streamed.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 { // 1xx (103 Early Hints) come before the real status
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
