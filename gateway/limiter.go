package gateway

import (
	"context"
	"fmt"
	"time"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/server"
)

// startLimiter builds a limiter chain on o.Client, runs its background work as the worker
// name (announcing this replica, publishing hot keys, syncing approximate counts) and
// closes it with the process. Its scripts are loaded and its connections dialled before the
// first request, whose decision has only o.Timeout; for at most two seconds, since a Redis
// that does not answer must not hold the start (the failsafe serves without it).
func startLimiter(ctx context.Context, s *server.Server, name string, o ratelimit.Options) (*ratelimit.Chain, error) {
	chain, err := ratelimit.New(o)
	if err != nil {
		return nil, fmt.Errorf("rate limiter (%s): %w", name, err)
	}
	s.OnClose(chain.Close)
	s.Go(name, func(ctx context.Context) error {
		// Withdrawing this replica at the stop only grows the others' share sooner than its
		// announcement expires: Redis down then is no failure.
		if err := chain.Run(ctx); err != nil {
			s.Log.Warn("rate limiter: replica not withdrawn; its announcement expires", "worker", name, "error", err)
		}
		return nil
	})
	warm, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := chain.Warm(warm); err != nil {
		s.Log.WarnContext(ctx, "rate limiter: scripts not loaded at start; the first decisions load them", "worker", name, "error", err)
	}
	return chain, nil
}
