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
)

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
