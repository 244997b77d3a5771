package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"boxoffice.dev/platform/clock"
)

// Outcomes of a request that a shaping limit queued (ratelimit.Rule.MaxDelay) and that did
// not reach its turn.
const (
	// outcomeQueueLeft: the client went away while it waited; logged with status 499.
	outcomeQueueLeft = "queue_left"
	// outcomeQueueDeadline: the request's deadline comes before its turn: 503 at once.
	outcomeQueueDeadline = "queue_deadline"
)

// waitTurn holds a request that a shaping limit queued for d, the turn its decision reserved,
// so that the route's service sees the requests over the rate at the rate. A client that
// leaves or a deadline that comes first ends the wait. The place stays spent, as a served
// request's does: given back, it would let the requests behind jump their turn. The wait is
// part of the request's duration (gateway_request_duration_seconds). See
// docs/lessons/algorithms.md, "Throttling by delay".
func (g *gateway) waitTurn(w http.ResponseWriter, r *http.Request, d time.Duration) outcome {
	if d <= 0 {
		return proceed
	}
	ctx := r.Context()
	// A context's deadline is on the wall clock, whatever clock the gateway is given.
	if end, ok := ctx.Deadline(); ok && time.Until(end) < d {
		writeStatus(w, r, http.StatusServiceUnavailable, "the request's deadline comes before its turn in the queue")
		return outcomeQueueDeadline
	}
	switch err := clock.Sleep(ctx, d); {
	case err == nil:
		return proceed
	case errors.Is(err, context.DeadlineExceeded):
		writeStatus(w, r, http.StatusServiceUnavailable, "the request's deadline passed before its turn in the queue")
		return outcomeQueueDeadline
	}
	w.WriteHeader(statusClientClosed) // no one reads it: for the access log
	return outcomeQueueLeft
}
