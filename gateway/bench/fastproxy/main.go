// Command fastproxy is a measuring stick for ADR 0006 (the gateway proxies with net/http),
// not a gateway. It does the policy work the gateway does on the bench's route, with the
// gateway's own code, on fasthttp instead of net/http, so that gateway/bench can show what
// leaving the standard library's HTTP stack would buy:
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

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"boxoffice.dev/gateway"
	"boxoffice.dev/platform/server"
)

func main() { server.Exec(run) }

// Config is what the flags say.
type Config struct {
	// Addr is the listen address (-addr); default 127.0.0.1:8080.
	Addr string
	// Upstream is the base URL every request is forwarded to (-upstream), required.
	Upstream string
	// Plain turns the policy work off (-plain): the proxy only forwards.
	Plain bool
	// PolicyFile, RedisURL and JWKSURL are required unless Plain: the policy whose routes
	// are enforced, the Redis that decides their limits, the key set tokens are checked
	// against.
	PolicyFile, RedisURL, JWKSURL string
	// Issuer and Audience are what tokens must name; default the auth service's.
	Issuer, Audience string
	// LimiterTimeout bounds one Redis decision; default 1s, the bench's RATELIMIT_TIMEOUT.
	LimiterTimeout time.Duration
}

// run parses the flags in args, then serves until ctx is done.
func run(ctx context.Context, args []string, getenv func(string) string, _, stderr io.Writer) error {
	cfg, err := parseFlags(args[1:], stderr)
	if err != nil {
		return err
	}
	gateway.TuneGC(getenv) // as the gateway's own main does
	return serve(ctx, cfg)
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("fastproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&cfg.Upstream, "upstream", "", "base URL of the upstream every request goes to")
	fs.BoolVar(&cfg.Plain, "plain", false, "no policy work: a plain reverse proxy")
	fs.StringVar(&cfg.PolicyFile, "policy", "", "policy file whose routes are enforced")
	fs.StringVar(&cfg.RedisURL, "redis", "", "Redis URL of the rate limiter")
	fs.StringVar(&cfg.JWKSURL, "jwks", "", "URL of the JWKS that user tokens are checked against")
	fs.StringVar(&cfg.Issuer, "issuer", "boxoffice-auth", "issuer user tokens must name")
	fs.StringVar(&cfg.Audience, "audience", "boxoffice", "audience user tokens must name")
	fs.DurationVar(&cfg.LimiterTimeout, "limiter-timeout", time.Second, "bound on one Redis decision")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return cfg, cfg.validate()
}

func (c Config) validate() error {
	if u, err := url.Parse(c.Upstream); err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("-upstream %q: want an http:// base URL", c.Upstream)
	}
	policyWork := c.PolicyFile != "" || c.RedisURL != "" || c.JWKSURL != ""
	switch {
	case c.Plain && policyWork:
		return errors.New("-plain does no policy work: drop -policy, -redis and -jwks")
	case !c.Plain && (c.PolicyFile == "" || c.RedisURL == "" || c.JWKSURL == ""):
		return errors.New("-policy, -redis and -jwks are all needed, or -plain")
	case c.LimiterTimeout <= 0:
		return errors.New("-limiter-timeout: want a positive duration")
	}
	return nil
}

// serve runs the proxy on cfg.Addr until ctx is done, then gives requests in flight two
// seconds to finish.
func serve(ctx context.Context, cfg Config) error {
	p, err := newProxy(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.close()
	srv := &fasthttp.Server{
		Handler: p.serve,
		Name:    "fastproxy",
		// Header names as the client sent them, as a proxy forwards them.
		DisableHeaderNamesNormalizing: true,
		ReadTimeout:                   30 * time.Second,
		IdleTimeout:                   90 * time.Second,
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		stop, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return srv.ShutdownWithContext(stop)
	}
}
