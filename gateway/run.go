package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"time"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/gateway/policy/reload"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/sqldb"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "gateway", HTTPAddr: ":8080", OwnHTTPMetrics: true, Edge: true}

// Run starts the gateway and serves until ctx is done. Its own variables, beside the
// platform's (HTTP_ADDR, REDIS_URL, DATABASE_URL, NATS_URL, …): see Config.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.MainWith(ctx, Spec, getenv, stdout, loadSettings, func(ctx context.Context, s *server.Server, set settings) (http.Handler, error) {
		return build(ctx, s, set.cfg, set.file)
	})
}

// build wires the gateway on the platform's server: the live policy, the rate limiter, the
// upstream pools, authentication, the reloads that keep the policy current, and the admin
// API. Neither Redis nor the database is a readiness check, nor a reason to refuse to
// start: the gateway keeps serving while either is down (limits fall back, the policy
// stays as last read), and a check on a store every replica shares would take all of them
// out at once.
func build(ctx context.Context, s *server.Server, cfg Config, file *policy.Policy) (http.Handler, error) {
	live, err := policy.NewLive(file, s.Log)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	mp, tp := s.Telemetry.MeterProvider, s.Telemetry.TracerProvider

	// This replica's name, for the limiter's fallback share and the policy's audit trail.
	replica := cmp.Or(cfg.ReplicaID, "gateway-"+rand.Text()[:12])

	// Rate limits: Redis behind the failsafe, this replica announced for the fallback's share.
	rd, err := s.RedisAllowDown(ctx)
	if err != nil {
		return nil, err
	}
	limiter, err := startLimiter(ctx, s, "ratelimit-replicas", ratelimit.Options{Client: rd, ReplicaID: replica,
		Timeout: cfg.LimiterTimeout, ClosedTimeout: cfg.LimiterClosedTimeout, Meter: mp, Logger: s.Log})
	if err != nil {
		return nil, err
	}
	// In a region, global limits are decided across regions (region.go); the admin API
	// keeps the chain for this region's hot keys.
	decider, err := regional(ctx, s, cfg, live, replica, limiter, rd)
	if err != nil {
		return nil, err
	}

	// Upstreams: the pools follow the policy; a change they refuse is refused whole.
	pools, err := upstream.New(serviceConfigs(live.Current(), cfg.Upstreams), upstream.Options{MeterProvider: mp, TracerProvider: tp, Log: s.Log})
	if err != nil {
		return nil, err
	}
	live.OnChange(func(snap *policy.Snapshot) error { return pools.Update(serviceConfigs(snap, cfg.Upstreams)) })
	s.Go("upstream-probes", func(ctx context.Context) error { pools.Run(ctx); return nil })

	auth, err := authenticator(s, cfg)
	if err != nil {
		return nil, err
	}
	trusted, err := authn.ParseTrusted(cfg.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("TRUSTED_PROXIES: %w", err)
	}

	// Hot reload: the file, and the tables (admin edits, tenant overrides) on a timer and on
	// NATS events. The tables are read once before serving, so a replica that restarts never
	// answers with the file alone while the admin edits wait in the table.
	store := policystore.New(sqldb.Options{URL: s.Config.DatabaseURL, Service: Spec.Name, DataDir: s.Config.DataDir}, s.Log)
	s.OnClose(store.Close)
	if cfg.PolicyFile != "" {
		recorded := reload.RecordReloads(store, replica, s.Log)
		s.Go("policy-file", func(ctx context.Context) error {
			return reload.WatchFile(ctx, cfg.PolicyFile, live, s.Log, recorded)
		})
	}
	if table, err := store.Open(ctx); err != nil {
		s.Log.WarnContext(ctx, "policy database not reachable at start; serving from the policy file", "error", err)
	} else if err := table.Reload(ctx, live); err != nil {
		s.Log.WarnContext(ctx, "policy tables not read at start; starting from the policy file", "error", err)
	}
	s.Go("policy-tables", func(ctx context.Context) error {
		table, err := store.Await(ctx, cmp.Or(cfg.TableRefresh, reload.DefaultTableRefresh))
		if err != nil {
			return err // ctx is done
		}
		return reload.FollowTable(ctx, table, live, s.NATS, cfg.TableRefresh, s.Log)
	})

	if err := serveAdmin(ctx, s, cfg, live, pools, store, replica, limiter); err != nil {
		return nil, err
	}
	m, err := newMetrics(mp)
	if err != nil {
		return nil, err
	}
	clientIP := authn.ClientIP{Trusted: trusted}
	// The gateway is the public edge: a client's traceparent is believed only through a
	// trusted proxy; anyone else's request starts a trace of the gateway's, linked to it.
	s.ContinueTracesFrom(clientIP.FromTrustedHop)
	g := &gateway{
		live: live, auth: auth, clientIP: clientIP,
		enforcer: limits.NewEnforcer(decider, tp, s.Log), upstream: pools,
		log: s.Log, metrics: m, now: time.Now, newTrace: randomTrace,
		index: index{playground: cfg.PlaygroundURL},
	}
	return g.handler(), nil
}
