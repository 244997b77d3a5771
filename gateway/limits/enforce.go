package limits

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/logging"
)

// Limiter is what the Enforcer needs of the rate limiter; *ratelimit.Failsafe is one.
type Limiter interface {
	Allow(ctx context.Context, reqs []ratelimit.Request) (ratelimit.Result, error)
	Release(ctx context.Context, leases ...ratelimit.Lease) error
}

var _ Limiter = (*ratelimit.Failsafe)(nil)

// Enforcer decides requests on the limiter, each in one call (one Redis round trip), inside a
// span of its own, and settles them after the response. Safe for concurrent use.
type Enforcer struct {
	limiter Limiter
	tracer  trace.Tracer
	log     *slog.Logger
}

// NewEnforcer uses limiter; tp (nil = no spans) traces decisions; log (nil = discard)
// reports settling failures.
func NewEnforcer(limiter Limiter, tp trace.TracerProvider, log *slog.Logger) *Enforcer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	if log == nil {
		log = logging.Discard()
	}
	return &Enforcer{limiter: limiter, tracer: tp.Tracer("boxoffice.dev/gateway/limits"), log: log}
}

// Decide asks the limiter about reqs. No requests means allowed without a call. An error
// means the requests themselves are invalid (a policy bug): the caller answers 500.
func (e *Enforcer) Decide(ctx context.Context, reqs []ratelimit.Request) (ratelimit.Result, error) {
	if len(reqs) == 0 {
		return ratelimit.Result{Decision: ratelimit.Decision{Allowed: true}}, nil
	}
	ctx, span := e.tracer.Start(ctx, "ratelimit.decide")
	defer span.End()
	res, err := e.limiter.Allow(ctx, reqs)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "invalid rate limit request")
		return res, err
	}
	if span.IsRecording() { // attributes cost allocations a no-op span would throw away
		span.SetAttributes(
			attribute.Int("ratelimit.rules", len(reqs)),
			attribute.Bool("ratelimit.allowed", res.Allowed),
			attribute.String("ratelimit.rule", res.Rule),
			attribute.String("ratelimit.path", string(res.Path)),
		)
	}
	return res, nil
}

// settleTimeout bounds the work done after a response: releasing slots and charging costs.
const settleTimeout = time.Second

// Settle finishes an allowed request once its response header is known, in the background:
// it releases res's concurrency slots and charges each Charge the cost its header reports
// beyond what was already spent; done (may be nil) is called when it has finished, for tests.
// A charge cannot be refused: it may overdraw the budget by at most one answer's cost per
// request in flight (docs/lessons/rate-limiting.md, "Rate limits, plans and quotas together").
func (e *Enforcer) Settle(ctx context.Context, res ratelimit.Result, charges []Charge, header http.Header, done func()) {
	leases := res.Leases()
	var costs []ratelimit.Request
	for _, c := range charges {
		n, err := strconv.Atoi(strings.TrimSpace(header.Get(c.Header)))
		if err != nil || n <= 0 {
			continue
		}
		// A charge spends at most what is left, so a cost past any budget drains it like the
		// largest one a rule may have; left unbounded, the limiter's arithmetic would wrap.
		n = min(n, ratelimit.MaxCount)
		spent := c.Request.Cost
		if spent == 0 {
			spent = max(1, c.Request.Rule.Cost)
		}
		if extra := n - spent; extra > 0 {
			q := c.Request
			q.Cost = extra
			costs = append(costs, q)
		}
	}
	if len(leases) == 0 && len(costs) == 0 {
		if done != nil {
			done()
		}
		return
	}
	ctx = context.WithoutCancel(ctx) // the client may be gone; the budget must still be spent
	go func() {
		if done != nil {
			defer done()
		}
		ctx, cancel := context.WithTimeout(ctx, settleTimeout)
		defer cancel()
		if len(leases) > 0 {
			if err := e.limiter.Release(ctx, leases...); err != nil {
				e.log.WarnContext(ctx, "release concurrency slots; they expire on their own", "error", err)
			}
		}
		for _, q := range costs {
			e.charge(ctx, q)
		}
	}()
}

// chargeAttempts bounds the tries to spend what is left of a budget that other requests
// are spending at the same time.
const chargeAttempts = 4

// charge spends q's cost, or what is left of the budget when that is less. Reading what is
// left and spending it are two calls, so a concurrent request can take some in between and
// make the second one too large: then it tries again with what is left now.
func (e *Enforcer) charge(ctx context.Context, q ratelimit.Request) {
	for range chargeAttempts {
		res, err := e.limiter.Allow(ctx, []ratelimit.Request{q})
		if err != nil || res.Allowed || res.Remaining <= 0 {
			return
		}
		q.Cost = res.Remaining
	}
}
