package graph

import (
	"context"
	"sync/atomic"
)

// TokensHeader is the response header the gateway charges the assistant's token quota from
// (limit assistant-tokens-per-account). bff-web reports what its ask fields cost in it, as the
// assistant's own REST route does: otherwise asking through GraphQL would be a way round the
// quota.
const TokensHeader = "X-Boxoffice-Tokens"

// Meter adds up the assistant tokens one request's answers cost. Safe for the concurrent
// resolvers of that request.
type Meter struct{ n atomic.Int64 }

// Tokens is what the request has cost so far.
func (m *Meter) Tokens() int64 { return m.n.Load() }

type meterKey struct{}

// WithMeter returns ctx with a new Meter for the ask resolvers of its request to add to.
func WithMeter(ctx context.Context) (context.Context, *Meter) {
	m := &Meter{}
	return context.WithValue(ctx, meterKey{}, m), m
}

// spend adds n tokens to ctx's Meter; without one (a schema used outside the handler) the
// cost goes unreported.
func spend(ctx context.Context, n int64) {
	if m, ok := ctx.Value(meterKey{}).(*Meter); ok {
		m.n.Add(n)
	}
}
