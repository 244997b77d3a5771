// Command fastproxy is a measuring stick for ADR 0006 (the gateway proxies with net/http),
// not a gateway. It does the policy work the gateway does on the bench's route, with the
// gateway's own code, on fasthttp instead of net/http, so that tools/bench-gateway can show
// what leaving the standard library's HTTP stack would buy:
//
//   - the bearer token checked by the gateway's authn.Verifier (and its cache of verified
//     tokens) against the JWKS at -jwks, the client's identity headers replaced by the
//     verified user's;
//   - the route's limits keyed by limits.Build and decided in one call of the gateway's
//     batching ratelimit.Redis, on a client that ends each call at its deadline, as the
//     gateway's does;
//   - the RateLimit fields written by limits.SetHeaders; hop-by-hop headers dropped,
//     X-Forwarded-*, X-Request-Id and a traceparent set, as the gateway forwards a request;
//   - GOGC=400 (gateway.TuneGC), as the gateway runs.
//
// What it leaves out, so that nobody mistakes it for a production path: no metrics, spans or
// access log (only the counters the bench reads, on /_fastproxy/metrics); no failsafe or
// local fallback (a Redis error is a 503); no upstream layer (one upstream, no P2C, probes,
// shedding or retry budget); no path normalisation; no body limits; no problem+json bodies;
// no hot reload of the policy. It takes only what the bench's policy has, routes with
// auth: user and plain rules keyed by user, ip or route, and refuses any other policy at
// start. With -plain it does no policy work at all: a plain reverse proxy.
//
//	fastproxy -upstream http://127.0.0.1:8081 -policy policy.yaml -redis redis://127.0.0.1:6379/0 -jwks http://127.0.0.1:8081/.well-known/jwks.json
//	fastproxy -plain -upstream http://127.0.0.1:8081
//
// It is a module of its own so that the gateway's module does not depend on fasthttp.
package main

import "boxoffice.dev/platform/server"

func main() { server.Exec(run) }
