// Package gateway is BoxOffice's gateway: the single front door that routes, authenticates,
// rate-limits, sheds and balances every request.
//
// The request path is in routes.go: gateway.serve calls the steps in the blueprint's order
// (design §5), each a method that is given its inputs and either answers the request itself
// or returns what it learnt (docs/adr/0009-the-request-pipeline.md); package upstream then
// sheds, balances, proxies and retries. Every step reads the one policy snapshot taken when
// the request arrived, so a policy swapped in mid-request never mixes two policies in one
// decision. run.go wires the process: configuration, Redis, the database, NATS, the auth
// service, the admin listener and the background loops.
package gateway

import (
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

// exchange is the record of one request, for the access log and the metrics (observe): serve
// fills it in from what each step returns. No step reads it, so what a step depends on is in
// its arguments.
type exchange struct {
	start   time.Time
	id      string
	ip      netip.Addr
	route   *policy.CompiledRoute
	caller  authn.Caller
	limit   decision
	outcome outcome
	body    cappedBody // the request body under max_body_bytes, held here to spare an allocation
}

// decision is a limit step's verdict on a request: the limiter requests it made and their
// result, the charges to settle after the response, and the rules that would have denied
// but did not: in shadow mode, or for a key outside a partial rule's enforced share. The zero
// value is no decision.
type decision struct {
	reqs       []ratelimit.Request
	result     ratelimit.Result
	charges    []limits.Charge
	shadow     []string
	unenforced []string
}

// outcome is why the gateway answered a request itself, in the words of the access log and
// the rejections metric. A step returns proceed when it let the request go on.
type outcome string

const proceed outcome = ""

// Outcomes the gateway answers itself.
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

func randomTrace() (trace.TraceID, trace.SpanID) {
	var t trace.TraceID
	var s trace.SpanID
	_, _ = rand.Read(t[:]) // never fails: it crashes the program rather than return an error
	_, _ = rand.Read(s[:])
	return t, s
}
