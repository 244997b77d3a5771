package limits

import (
	"fmt"
	"net/http"
	"strconv"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/problem"
)

// CodeRateLimited is the extensions.code of a GraphQL operation refused by a limit.
const CodeRateLimited = "RATE_LIMITED"

// QueryCost is what a GraphQL operation cost and what its budget holds after it: the
// response's extensions.cost, in the spirit of GitHub's rateLimit and Shopify's cost
// extension.
type QueryCost struct {
	// Requested is the operation's calculated cost in points.
	Requested int `json:"requested"`
	// Remaining is what the budget holds after it (before it, when it was refused).
	Remaining int `json:"remaining"`
	// Maximum is the most the budget holds: the most one operation may cost.
	Maximum int `json:"maximum"`
	// RestoreRate is the points the budget gains back each second.
	RestoreRate float64 `json:"restoreRate"`
	// Policy is the limit the points are spent from.
	Policy string `json:"policy"`
}

// CostOf is the cost report of a request built by Build and decided as res; nil when the
// request spent no points.
func CostOf(b Built, res ratelimit.Result) *QueryCost {
	if b.Cost < 0 || b.Cost >= len(res.Rules) {
		return nil
	}
	q, d := b.Requests[b.Cost], res.Rules[b.Cost]
	maximum, _ := quota(d, q.Rule)
	rate := float64(q.Rule.Limit) / q.Rule.Window.Seconds()
	return &QueryCost{Requested: q.Cost, Remaining: max(0, d.Remaining), Maximum: maximum,
		RestoreRate: float64(int64(rate*1000+0.5)) / 1000, Policy: d.Rule}
}

// graphQLError is one entry of a GraphQL response's errors.
type graphQLError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// TooManyGraphQL is the body of a 429 on a GraphQL route: the problem of any 429, which is
// also a GraphQL response a GraphQL client reads, with its errors and the cost extension.
type TooManyGraphQL struct {
	TooMany
	Errors     []graphQLError `json:"errors"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// WriteTooManyGraphQL answers a GraphQL operation denied by its limits as WriteTooMany does,
// with, in the body, a GraphQL error whose extensions.code is RATE_LIMITED and names the
// policy, and the operation's cost (nil when it spent no points).
func WriteTooManyGraphQL(w http.ResponseWriter, reqs []ratelimit.Request, res ratelimit.Result, cost *QueryCost, traceID string) {
	SetHeaders(w.Header(), reqs, res)
	after := reset(res.Decision)
	w.Header().Set("Retry-After", strconv.FormatInt(after, 10))
	eff := res.Decision
	body := TooManyGraphQL{TooMany: TooMany{Type: QuotaExceeded, Title: "Too many requests", Status: http.StatusTooManyRequests,
		ViolatedPolicies: violated(res), RetryAfter: after, TraceID: traceID}}
	if cost != nil && eff.Rule == cost.Policy {
		body.Detail = fmt.Sprintf("this operation costs %d points and %s holds %d, gaining %g a second; retry in %ds",
			cost.Requested, cost.Policy, cost.Remaining, cost.RestoreRate, after)
	} else {
		body.Detail = fmt.Sprintf("%s allows %d per %s; retry in %ds", eff.Rule, eff.Limit, window(eff.Window), after)
	}
	ext := map[string]any{"code": CodeRateLimited, "policy": eff.Rule, "retryAfterSeconds": after}
	body.Errors = []graphQLError{{Message: body.Detail, Extensions: ext}}
	if cost != nil {
		body.Extensions = map[string]any{"cost": cost}
	}
	problem.WriteDetails(w, http.StatusTooManyRequests, body)
}
