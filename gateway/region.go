package gateway

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/platform/server"
)

// regional returns the limiter the policy's limits are enforced with: local, this region's
// chain, without REGION (one Redis is one limit already); with it, local inside a
// ratelimit.Regional, plus a chain on the home Redis outside the home region, which may be
// down at start as REDIS_URL may. A later policy whose split leaves this region out is
// refused. See docs/lessons/distributed.md, "One limit, two regions".
func regional(ctx context.Context, s *server.Server, cfg Config, live *policy.Live, replica string, local *ratelimit.Chain, rd redis.UniversalClient) (limits.Limiter, error) {
	if cfg.Region == "" {
		return local, nil
	}
	live.OnChange(func(snap *policy.Snapshot) error { return snap.Policy.CheckRegion(cfg.Region) })
	o := ratelimit.RegionalOptions{Region: cfg.Region, Replica: replica, Store: rd, Rebalance: cfg.RegionRebalance,
		Meter: s.Telemetry.MeterProvider}
	if cfg.Region != cfg.HomeRegion {
		home, err := redisconn.Dial(cfg.HomeRedisURL) // connects on first use: no PING to fail the start
		if err != nil {
			return nil, fmt.Errorf("HOME_REDIS_URL: %w", err)
		}
		s.OnClose(home.Close)
		// The home chain's metrics would share the names and labels of this region's chain's,
		// so it reports none: Regional counts its decisions, and its breaker changes are
		// logged as the home store's. Its
		// replica is announced in the home Redis beside the home region's own, so its
		// fallback takes a share of the limit among every region's replicas.
		o.Home, err = startLimiter(ctx, s, "ratelimit-home", ratelimit.Options{Client: home.Client, ReplicaID: cfg.Region + "-" + replica,
			Timeout: cfg.HomeLimiterTimeout, ClosedTimeout: cfg.HomeLimiterTimeout, Logger: s.Log.With("store", "home")})
		if err != nil {
			return nil, err
		}
		o.Store = home.Client
	}
	g, err := ratelimit.NewRegional(local, o)
	if err != nil {
		return nil, err
	}
	s.Every("ratelimit-rebalance", g.RebalanceEvery(), g.Rebalance)
	return g, nil
}

// checkRegions reports a REGION, HOME_REGION and HOME_REDIS_URL that do not make a
// deployment: all unset (one region), or a region, the home one, and the home region's
// Redis outside it.
func checkRegions(r *config.Reader, cfg Config) {
	const want = "a region: lowercase letters, digits and dashes, such as eu or us-east-1"
	switch {
	case cfg.Region == "" && (cfg.HomeRegion != "" || cfg.HomeRedisURL != ""):
		r.Fail("REGION", "", "this gateway's region, since HOME_REGION or HOME_REDIS_URL is set (unset both for a single region)")
		return
	case cfg.Region == "":
		return
	case !policy.ValidRegion(cfg.Region):
		r.Fail("REGION", cfg.Region, want)
	}
	switch {
	case cfg.HomeRegion == "":
		r.Fail("HOME_REGION", "", "the region whose Redis holds the global counts, with REGION set")
	case !policy.ValidRegion(cfg.HomeRegion):
		r.Fail("HOME_REGION", cfg.HomeRegion, want)
	case cfg.Region != cfg.HomeRegion && cfg.HomeRedisURL == "":
		r.Fail("HOME_REDIS_URL", "", "the Redis of the home region "+cfg.HomeRegion+", for a gateway in "+cfg.Region)
	case cfg.Region == cfg.HomeRegion && cfg.HomeRedisURL != "":
		r.Fail("HOME_REDIS_URL", config.Hidden, "unset in the home region: its own Redis, REDIS_URL, holds the global counts")
	}
}
