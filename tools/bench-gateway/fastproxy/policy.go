package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/identity"
)

// policyWork is what the gateway does to a request before forwarding it, for the routes
// this proxy accepts (see supported). It is safe for concurrent use.
type policyWork struct {
	ctx      context.Context // parent of each decision's timeout
	snap     *policy.Snapshot
	verifier *authn.Verifier
	redis    *redis.Client
	store    *ratelimit.Redis
	timeout  time.Duration // bound on one Redis decision

	headers sync.Pool // http.Header maps for limits.SetHeaders, reused
}

// decision is an allowed request's limiter requests and their result, for its RateLimit
// fields.
type decision struct {
	reqs []ratelimit.Request
	res  ratelimit.Result
}

// newPolicyWork loads the policy and wires the policy work as gateway.Run does: the JWKS
// refreshed in the background until ctx is done, the verified-token cache in front of it,
// and a ratelimit.Redis whose client ends each call at its context's deadline.
func newPolicyWork(ctx context.Context, cfg Config) (*policyWork, error) {
	file, err := policy.LoadFile(cfg.PolicyFile)
	if err != nil {
		return nil, err
	}
	snap, err := policy.Compile(file, nil)
	if err != nil {
		return nil, err
	}
	if err := supported(snap); err != nil {
		return nil, err
	}
	jwks := authn.NewJWKS(cfg.JWKSURL, authn.JWKSOptions{})
	go jwks.Run(ctx)
	o, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	o.ContextTimeoutEnabled = true
	w := &policyWork{
		ctx: ctx, snap: snap, timeout: cfg.LimiterTimeout,
		verifier: authn.NewVerifier(jwks, cfg.Issuer, cfg.Audience, 5*time.Second),
		redis:    redis.NewClient(o),
	}
	w.headers.New = func() any { return http.Header{} }
	if w.store, err = ratelimit.NewRedisWith(w.redis, ratelimit.RedisOptions{}); err != nil {
		w.close()
		return nil, err
	}
	// Scripts loaded and a connection dialled before the first request, as the gateway does.
	warm, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := w.store.Warm(warm); err != nil {
		w.close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	return w, nil
}

func (w *policyWork) close() { w.redis.Close() }

// supported refuses what this proxy does not do as the gateway would: a route other than
// auth: user, and rules that need the gateway's limiter chain or its response-time work
// (concurrency slots, leases, shards, costs read from the response), or keys it does not
// build (API keys, tenants, headers, body fields, GraphQL operations).
func supported(snap *policy.Snapshot) error {
	for _, rt := range snap.Routes() {
		if rt.Auth != policy.AuthUser {
			return fmt.Errorf("route %s: auth %s: fastproxy takes only auth: user", rt.ID, rt.Auth)
		}
		if rt.GraphQL != nil {
			return fmt.Errorf("route %s: graphql: fastproxy reads no GraphQL operation", rt.ID)
		}
		for _, l := range rt.Limits {
			if l.Rule.Algorithm == ratelimit.Concurrency || l.Rule.Lease > 0 || l.Rule.Shards > 1 || l.CostHeader != "" {
				return fmt.Errorf("limit %s: fastproxy takes no concurrency, lease, shards or cost_header", l.ID)
			}
			for _, part := range l.Key {
				switch part.Kind {
				case policy.KeyUser, policy.KeyIP, policy.KeyRoute:
				default:
					return fmt.Errorf("limit %s: key %s: fastproxy keys by user, ip and route only", l.ID, part.Kind)
				}
			}
		}
	}
	return nil
}

// decide runs the policy on rc: the route matched, the bearer token verified, the client's
// identity headers replaced by the verified user's, and every limit decided in one Redis
// call. A request it refuses it answers itself (404, 401, 429, 503) and says why; an
// allowed one's outcome is forwarded.
func (w *policyWork) decide(rc *fasthttp.RequestCtx) (decision, outcome) {
	rt, _ := w.snap.Match(string(rc.Method()), string(rc.Path()))
	if rt == nil {
		rc.Error("no route", fasthttp.StatusNotFound)
		return decision{}, noRoute
	}
	h := &rc.Request.Header
	for _, name := range identity.Headers {
		h.Del(name)
	}
	h.Del(authn.HeaderAPIKey)
	raw, ok := bearer(h.Peek("Authorization"))
	if !ok {
		refuse(rc, "this route needs a bearer token")
		return decision{}, unauthorized
	}
	claims, err := w.verifier.Verify(w.ctx, raw)
	if err != nil {
		refuse(rc, "token is invalid")
		return decision{}, unauthorized
	}
	h.Set(identity.HeaderUser, claims.Subject)
	caller := authn.Caller{Identity: identity.Identity{User: claims.Subject}}
	built, _ := limits.Build(w.snap, limits.Subject{Route: rt, Caller: caller, IP: peerIP(rc)}) // no charges nor GraphQL: see supported
	reqs := built.Requests
	ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
	res, err := w.store.Allow(ctx, reqs)
	cancel()
	d := decision{reqs: reqs, res: res}
	switch {
	case err != nil:
		rc.Error("the limits of this route cannot be checked right now", fasthttp.StatusServiceUnavailable)
		rc.Response.Header.Set("Retry-After", "1")
		return decision{}, limitStoreError
	case !res.Allowed:
		rc.Error("too many requests", fasthttp.StatusTooManyRequests)
		w.setLimitHeaders(&rc.Response.Header, d)
		return decision{}, rateLimited
	}
	return d, forwarded
}

// refuse answers 401 with the gateway's challenge.
func refuse(rc *fasthttp.RequestCtx, msg string) {
	rc.Error(msg, fasthttp.StatusUnauthorized) // resets the response's headers: first
	rc.Response.Header.Set("WWW-Authenticate", `Bearer realm="boxoffice"`)
}

// bearer reads "Bearer <token>", the scheme in any case, as authn does.
func bearer(v []byte) (string, bool) {
	scheme, tok, ok := bytes.Cut(v, []byte(" "))
	if !ok || !bytes.EqualFold(scheme, []byte("Bearer")) {
		return "", false
	}
	tok = bytes.TrimSpace(tok)
	return string(tok), len(tok) > 0
}

// setLimitHeaders writes d's RateLimit fields with the gateway's own formatter, through a
// reused http.Header.
func (w *policyWork) setLimitHeaders(dst *fasthttp.ResponseHeader, d decision) {
	hh := w.headers.Get().(http.Header)
	limits.SetHeaders(hh, d.reqs, d.res)
	for k, v := range hh {
		dst.Set(k, v[0])
	}
	clear(hh)
	w.headers.Put(hh)
}
