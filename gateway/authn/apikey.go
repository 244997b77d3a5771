package authn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/clock"
	authv1 "boxoffice.dev/proto/boxoffice/auth/v1"
)

// Tenant is what an API key stands for.
type Tenant struct {
	ID   string
	Plan string
	Name string
}

// ErrUnknownAPIKey is returned for a key the auth service does not know.
var ErrUnknownAPIKey = errors.New("unknown API key")

// KeyResolver finds the tenant of an API key: ErrUnknownAPIKey when there is none, another
// error when it cannot tell (the auth service is unreachable).
type KeyResolver interface {
	ResolveAPIKey(ctx context.Context, key string) (Tenant, error)
}

// GRPCResolver asks the auth service's ResolveAPIKey over gRPC.
type GRPCResolver struct {
	Client authv1.AuthClient
	// Timeout bounds each call; 0 means 1s.
	Timeout time.Duration
}

var _ KeyResolver = (*GRPCResolver)(nil)

// ResolveAPIKey calls the auth service.
func (g *GRPCResolver) ResolveAPIKey(ctx context.Context, key string) (Tenant, error) {
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := g.Client.ResolveAPIKey(ctx, &authv1.ResolveAPIKeyRequest{ApiKey: key})
	switch status.Code(err) {
	case codes.OK:
		return Tenant{ID: resp.GetTenant(), Plan: resp.GetPlan(), Name: resp.GetTenantName()}, nil
	case codes.NotFound, codes.Unauthenticated, codes.InvalidArgument:
		return Tenant{}, ErrUnknownAPIKey
	}
	return Tenant{}, fmt.Errorf("resolve api key: %w", err)
}

// APIKeys caches a KeyResolver's answers for a short TTL, unknown keys too: a revoked key
// retried, or a scanner, would otherwise cost an auth call per request. A revoked key keeps
// working for at most TTL. Concurrent lookups of one key share one call; errors other than
// ErrUnknownAPIKey are not cached; memory is bounded (secretCache). Safe for concurrent use.
type APIKeys struct {
	resolver    KeyResolver
	ttl, negTTL time.Duration
	now         func() time.Time

	calls singleflight.Group
	cache *secretCache[cached]
}

type cached struct {
	tenant Tenant
	known  bool
}

// APIKeysOptions configures an APIKeys; the zero value gives the defaults.
type APIKeysOptions struct {
	// TTL is how long a known key is trusted without asking again; 0 means 30s.
	TTL time.Duration
	// NegativeTTL is how long an unknown key stays unknown; 0 means 10s.
	NegativeTTL time.Duration
	// MaxEntries bounds the cache; 0 means 10,000.
	MaxEntries int
	// Clock is the time source; the zero Clock is time.Now.
	Clock clock.Clock
}

// NewAPIKeys caches r's answers.
func NewAPIKeys(r KeyResolver, o APIKeysOptions) *APIKeys {
	a := &APIKeys{resolver: r, ttl: o.TTL, negTTL: o.NegativeTTL, now: o.Clock.Now}
	if a.ttl <= 0 {
		a.ttl = 30 * time.Second
	}
	if a.negTTL <= 0 {
		a.negTTL = 10 * time.Second
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 10_000
	}
	a.cache = newSecretCache[cached](o.MaxEntries)
	return a
}

var _ KeyResolver = (*APIKeys)(nil)

// ResolveAPIKey answers from the cache, or asks the resolver once for all concurrent callers.
func (a *APIKeys) ResolveAPIKey(ctx context.Context, key string) (Tenant, error) {
	h := sha256.Sum256([]byte(key))
	if c, ok := a.cache.get(h, a.now()); ok {
		if !c.known {
			return Tenant{}, ErrUnknownAPIKey
		}
		return c.tenant, nil
	}
	v, err, _ := a.calls.Do(string(h[:]), func() (any, error) {
		// The first caller's context bounds the shared call; a caller cancelled early makes
		// the others retry at their next request rather than hang.
		t, err := a.resolver.ResolveAPIKey(ctx, key)
		switch {
		case err == nil:
			now := a.now()
			a.cache.put(h, cached{tenant: t, known: true}, now.Add(a.ttl), now)
		case errors.Is(err, ErrUnknownAPIKey):
			now := a.now()
			a.cache.put(h, cached{}, now.Add(a.negTTL), now)
		}
		return t, err
	})
	return v.(Tenant), err
}

// KeyID is a short, stable, non-secret name for an API key: the start of its SHA-256. Limits
// keyed by apikey count by it, and logs may show it.
func KeyID(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:8])
}
