// Package gateway is BoxOffice's gateway: the single front door that routes, authenticates,
// rate-limits, sheds and balances every request.
//
// The request path is a chain of small steps, each a middleware in routes.go, in the order
// of the blueprint (design §5): request id and trace context, body limit, client IP, a
// per-address pre-limit in memory, route match, authentication, rate limits and quotas, then
// the upstream layer (package upstream: shedding, readiness-checked balancing, timeouts, a
// budgeted retry). Every step reads one policy snapshot taken when the request arrived, so a
// policy swapped in mid-request never mixes two policies in one decision. run.go wires the
// process: configuration, Redis, the database, NATS, the auth service, the admin listener
// and the background loops.
package gateway

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"go.opentelemetry.io/otel/trace"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/graphqlop"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
)

// forwarder sends a request to a service's instances; *upstream.Pools is one.
type forwarder interface {
	Forward(w http.ResponseWriter, r *http.Request, service string, ro upstream.RouteOptions)
}

var _ forwarder = (*upstream.Pools)(nil)

// gateway holds what the request path needs. Every field is safe for concurrent use.
type gateway struct {
	live     *policy.Live
	auth     *authn.Authenticator
	clientIP authn.ClientIP
	enforcer *limits.Enforcer
	// local decides the pre-limit (gateway.limitLocally) in this replica's memory; nil means
	// handler makes one on now.
	local    *ratelimit.Memory
	upstream forwarder
	log      *slog.Logger
	metrics  *metrics
	now      func() time.Time
	// newTrace returns fresh trace and span ids for a request that arrives without trace
	// context (nil means crypto/rand).
	newTrace func() (trace.TraceID, trace.SpanID)
	// index answers GET / (gateway.serveIndex).
	index index
	// persisted are the GraphQL persisted queries this replica has learnt (readOperation);
	// nil means handler makes one.
	persisted *graphqlop.Persisted
}

// exchange is one request's state as it moves through the pipeline: each step fills in what
// it learnt, and the access log and metrics read it at the end.
type exchange struct {
	start   time.Time
	id      string
	snap    *policy.Snapshot
	ip      netip.Addr
	route   *policy.CompiledRoute
	caller  authn.Caller
	op      *graphqlop.Operation // the GraphQL operation, on a GraphQL route
	reqs    []ratelimit.Request
	result  ratelimit.Result
	shadow  []string   // shadow rules that would have denied
	outcome string     // why the gateway answered itself; "" when the upstream did
	body    cappedBody // the request body under max_body_bytes, held here to spare an allocation
}

// Outcomes the gateway answers itself, for the access log and the rejections metric.
const (
	outcomeNoRoute       = "no_route"
	outcomeMethod        = "method_not_allowed"
	outcomeBadPath       = "bad_path"
	outcomeTooLarge      = "body_too_large"
	outcomeUnauthorized  = "unauthorized"
	outcomeForbidden     = "forbidden"
	outcomeAuthDown      = "auth_unavailable"
	outcomeRateLimited   = "rate_limited"
	outcomeStoreDown     = "limit_store_unavailable"
	outcomeInvalidPolicy = "invalid_policy"
	outcomeBadOperation  = "bad_graphql_operation"
	outcomeNotPersisted  = "persisted_query_not_found"
)

type exchangeKey struct{}

func exchangeOf(r *http.Request) *exchange {
	ex, _ := r.Context().Value(exchangeKey{}).(*exchange)
	return ex
}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

func randomTrace() (trace.TraceID, trace.SpanID) {
	var t trace.TraceID
	var s trace.SpanID
	_, _ = rand.Read(t[:]) // never fails: it crashes the program rather than return an error
	_, _ = rand.Read(s[:])
	return t, s
}
