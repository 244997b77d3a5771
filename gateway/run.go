package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"boxoffice.dev/gateway/admin"
	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/limits"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/gateway/upstream/endpoint"
	"boxoffice.dev/platform/config"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/redisconn"
	"boxoffice.dev/platform/server"
	"boxoffice.dev/platform/sqldb"
	authv1 "boxoffice.dev/proto/boxoffice/auth/v1"
)

// Spec names the process and its default listen addresses.
var Spec = server.Spec{Name: "gateway", HTTPAddr: ":8080", OwnHTTPMetrics: true, Edge: true}

// defaultPolicy is the policy `boxoffice up` runs with when POLICY_FILE is not set.
//
//go:embed policy.yaml
var defaultPolicy []byte

// Config is the gateway's own configuration, beside the platform's (config.Process).
type Config struct {
	// PolicyFile is POLICY_FILE, watched and reloaded; "" runs the embedded default policy.
	PolicyFile string
	// AdminAddr is ADMIN_ADDR, the admin API's own listener.
	AdminAddr string
	// AdminToken is ADMIN_TOKEN; when empty, one is generated and written to
	// DATA_DIR/gateway-admin-token (mode 0600), and the log says where.
	AdminToken string
	// AuthURL is AUTH_URL, the auth service's HTTP base: its JWKS is AuthURL/.well-known/jwks.json.
	AuthURL string
	// AuthGRPCAddr is AUTH_GRPC_ADDR, where API keys are resolved.
	AuthGRPCAddr string
	// Issuer and Audience are AUTH_ISSUER and AUTH_AUDIENCE, what tokens must name.
	Issuer, Audience string
	// TokenLeeway is TOKEN_LEEWAY, the clock skew tolerated on exp and nbf.
	TokenLeeway time.Duration
	// TrustedProxies is TRUSTED_PROXIES: CIDRs whose X-Forwarded-For is believed.
	TrustedProxies []string
	// Upstreams are the UPSTREAM_<NAME> variables (UPSTREAM_BFF_MOBILE for bff-mobile):
	// comma-separated base URLs that replace a service's instances in the policy.
	Upstreams map[string][]string
	// ReplicaID is GATEWAY_REPLICA_ID, how this replica announces itself for the limiter's
	// fallback share; "" means random.
	ReplicaID string
	// LimiterTimeout is RATELIMIT_TIMEOUT, the bound on one Redis round trip from the moment
	// it is written (default 5ms).
	LimiterTimeout time.Duration
	// LimiterClosedTimeout is RATELIMIT_CLOSED_TIMEOUT, the same bound for requests with a
	// fail-closed rule (default 50ms): their alternative to waiting is a 503, not a fallback.
	LimiterClosedTimeout time.Duration
	// TableRefresh is RATE_LIMIT_RULE_REFRESH, how often the rate_limit_rule and policy_edit
	// tables (the per-tenant overrides and the admin edits) are reloaded without an event.
	TableRefresh time.Duration
	// PlaygroundURL is PLAYGROUND_URL, the playground's address, which the index at GET /
	// shows; "" leaves it out (`boxoffice up` sets it).
	PlaygroundURL string
}

// Run starts the gateway and serves until ctx is done. Its own variables, beside the
// platform's (HTTP_ADDR, REDIS_URL, DATABASE_URL, NATS_URL, …): see Config.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return server.MainWith(ctx, Spec, getenv, stdout, loadSettings, func(ctx context.Context, s *server.Server, set settings) (http.Handler, error) {
		return build(ctx, s, set.cfg, set.file)
	})
}

// settings is what the gateway reads at start beside the platform's configuration: its own
// variables and the policy POLICY_FILE names.
type settings struct {
	cfg  Config
	file *policy.Policy
}

// loadSettings reads the gateway's variables and its policy, and the UPSTREAM_<NAME> variables
// of the policy's services. A policy that cannot be loaded is reported as a mistake in
// POLICY_FILE, with every other invalid variable (server.MainWith), before anything starts.
func loadSettings(r *config.Reader) settings {
	cfg := loadConfig(r)
	if _, err := authn.ParseTrusted(cfg.TrustedProxies); err != nil {
		r.Fail("TRUSTED_PROXIES", strings.Join(cfg.TrustedProxies, ","), "IP addresses or CIDR prefixes: "+err.Error())
	}
	file, err := loadPolicy(cfg.PolicyFile)
	if err == nil {
		_, err = policy.Compile(file, nil) // what parses may still not build
	}
	if err != nil {
		r.Fail("POLICY_FILE", cfg.PolicyFile, "a valid policy: "+err.Error())
		return settings{cfg: cfg}
	}
	for _, sv := range file.Services {
		name := upstreamVar(sv.Name)
		v := r.List(name, nil)
		if v == nil {
			continue
		}
		for _, inst := range v {
			if _, err := endpoint.ParseInstance(inst); err != nil {
				r.Fail(name, endpoint.HideUser(strings.Join(v, ",")), "instance URLs of "+sv.Name+": "+err.Error())
				break
			}
		}
		cfg.Upstreams[sv.Name] = v
	}
	return settings{cfg: cfg, file: file}
}

func loadConfig(r *config.Reader) Config {
	return Config{
		PolicyFile:           r.String("POLICY_FILE", ""),
		AdminAddr:            r.Addr("ADMIN_ADDR", "127.0.0.1:9080"),
		AdminToken:           r.String("ADMIN_TOKEN", ""),
		AuthURL:              strings.TrimSuffix(r.URL("AUTH_URL", "http://127.0.0.1:8101", "http", "https"), "/"),
		AuthGRPCAddr:         r.String("AUTH_GRPC_ADDR", "127.0.0.1:9101"),
		Issuer:               r.String("AUTH_ISSUER", "boxoffice-auth"),
		Audience:             r.String("AUTH_AUDIENCE", "boxoffice"),
		TokenLeeway:          r.Duration("TOKEN_LEEWAY", 5*time.Second),
		TrustedProxies:       r.List("TRUSTED_PROXIES", nil),
		ReplicaID:            r.String("GATEWAY_REPLICA_ID", ""),
		LimiterTimeout:       r.Duration("RATELIMIT_TIMEOUT", 5*time.Millisecond),
		LimiterClosedTimeout: r.Duration("RATELIMIT_CLOSED_TIMEOUT", 50*time.Millisecond),
		TableRefresh:         r.Duration("RATE_LIMIT_RULE_REFRESH", policy.DefaultTableRefresh),
		PlaygroundURL:        r.URL("PLAYGROUND_URL", "", "http", "https"),
		Upstreams:            map[string][]string{},
	}
}

// upstreamVar names a service's instance variable: UPSTREAM_BFF_MOBILE for bff-mobile.
func upstreamVar(service string) string {
	return "UPSTREAM_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(service))
}

func loadPolicy(path string) (*policy.Policy, error) {
	if path == "" {
		return policy.Parse(defaultPolicy)
	}
	return policy.LoadFile(path)
}

// build wires the gateway on the platform's server. Redis and the database are opened here
// rather than through s.Redis and s.OpenDB, which would add them to /readyz: the gateway
// keeps serving while either is down (limits fall back, overrides stay as last read), and a
// readiness check on a store shared by every replica would take all of them out at once.
func build(ctx context.Context, s *server.Server, cfg Config, file *policy.Policy) (http.Handler, error) {
	live, err := policy.NewLive(file, s.Log)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	mp, tp := s.Telemetry.MeterProvider, s.Telemetry.TracerProvider

	// Rate limits: Redis behind the failsafe, this replica announced for the fallback's share.
	// A REDIS_URL that does not answer is a warning, not a reason to refuse to start: the
	// failsafe decides on the local fallback (or refuses, for a fail-closed rule) until it
	// answers, so a replica started during an outage serves as the running ones do.
	rd, err := redisconn.Resolve(ctx, redisconn.Options{URL: s.Config.RedisURL, DataDir: filepath.Join(s.Config.DataDir, "redis-gateway"),
		Log: s.Log, AllowDown: true})
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	s.OnClose(rd.Close)
	limiter, err := ratelimit.New(ratelimit.Options{Client: rd.Client, ReplicaID: cfg.ReplicaID,
		Timeout: cfg.LimiterTimeout, ClosedTimeout: cfg.LimiterClosedTimeout, Now: time.Now, Meter: mp, Logger: s.Log})
	if err != nil {
		return nil, fmt.Errorf("rate limiter: %w", err)
	}
	s.OnClose(limiter.Close)
	s.Go("ratelimit-replicas", func(ctx context.Context) error {
		// Withdrawing this replica's announcement at the stop is a courtesy to the others,
		// whose share grows at once rather than when it expires: Redis down then is no failure.
		if err := limiter.Run(ctx); err != nil {
			s.Log.Warn("rate limiter: replica not withdrawn; its announcement expires", "error", err)
		}
		return nil
	})
	// Scripts loaded and connections dialled before the first request, whose decision has
	// only RATELIMIT_TIMEOUT; bounded, since a Redis that does not answer must not hold the
	// start (the failsafe serves without it).
	warm, cancelWarm := context.WithTimeout(ctx, 2*time.Second)
	if err := limiter.Warm(warm); err != nil {
		s.Log.WarnContext(ctx, "rate limiter: scripts not loaded at start; the first decisions load them", "error", err)
	}
	cancelWarm()

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
	// NATS events.
	if cfg.PolicyFile != "" {
		s.Go("policy-file", func(ctx context.Context) error { return policy.WatchFile(ctx, cfg.PolicyFile, live, s.Log) })
	}
	// A database that cannot be opened is not a reason to refuse to start: the policy file is
	// enough to serve, and an outage of the database must not keep a replica from coming up.
	// followTables keeps trying, and the admin API's edits answer 503 until it answers.
	stored := &tables{}
	s.OnClose(stored.Close)
	dbOpts := sqldb.Options{URL: s.Config.DatabaseURL, Service: Spec.Name, DataDir: s.Config.DataDir}
	if db, err := migrated(ctx, dbOpts); err != nil {
		s.Log.WarnContext(ctx, "policy database not reachable at start; serving from the policy file", "error", err)
	} else if err := stored.use(db).Reload(ctx, live); err != nil {
		// Read once before serving, so a replica that restarts never answers with the file
		// alone while the admin edits wait in the table; FollowTable retries a failure.
		s.Log.WarnContext(ctx, "policy tables not read at start; starting from the policy file", "error", err)
	}
	s.Go("policy-tables", func(ctx context.Context) error { return followTables(ctx, s, cfg, live, stored, dbOpts) })

	if err := serveAdmin(ctx, s, cfg, live, pools, stored); err != nil {
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
		enforcer: limits.NewEnforcer(limiter, tp, s.Log), upstream: pools,
		log: s.Log, metrics: m, now: time.Now, newTrace: randomTrace,
		index: index{playground: cfg.PlaygroundURL},
	}
	return g.handler(), nil
}

// tablesOpenTimeout bounds one attempt at opening and migrating the policy database, so a
// database that neither answers nor refuses delays the start by at most this much.
const tablesOpenTimeout = 10 * time.Second

// migrated opens the database opts names and applies the policy tables' migrations, within
// tablesOpenTimeout.
func migrated(ctx context.Context, opts sqldb.Options) (*sqldb.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, tablesOpenTimeout)
	defer cancel()
	db, err := sqldb.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, policy.Migrations()); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("policy tables: %w", err)
	}
	return db, nil
}

// followTables keeps live on the policy tables until ctx is done (policy.FollowTable). While
// tables has no database, it opens the one opts names every TableRefresh until it answers,
// and only then offers the tables to the admin API.
func followTables(ctx context.Context, s *server.Server, cfg Config, live *policy.Live, tables *tables, opts sqldb.Options) error {
	refresh := cmp.Or(cfg.TableRefresh, policy.DefaultTableRefresh)
	for tables.table.Load() == nil {
		t := time.NewTimer(refresh)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		db, err := migrated(ctx, opts)
		if err != nil {
			s.Log.WarnContext(ctx, "policy database still not reachable; serving from the policy file", "error", err)
			continue
		}
		s.Log.InfoContext(ctx, "policy database reachable; reading the policy tables")
		tables.use(db)
	}
	return policy.FollowTable(ctx, tables.table.Load(), live, s.NATS, cfg.TableRefresh, s.Log)
}

// tables is the policy tables for the admin API: a *policy.Table once the database has been
// opened (use), and until then an answer of 503 (problem.Unavailable) to every call, rather
// than edits this replica alone would hold. The zero value has no database. Safe for
// concurrent use.
type tables struct {
	table atomic.Pointer[policy.Table]
	db    atomic.Pointer[sqldb.DB]
}

// use makes db's tables the ones served, and returns them; it is called at most once.
func (t *tables) use(db *sqldb.DB) *policy.Table {
	t.db.Store(db)
	tb := policy.NewTable(db, nil)
	t.table.Store(tb)
	return tb
}

// Close closes the database, if one was opened.
func (t *tables) Close() error {
	if db := t.db.Load(); db != nil {
		return db.Close()
	}
	return nil
}

var (
	_ admin.Tenants = (*tables)(nil)
	_ admin.Edits   = (*tables)(nil)
)

// errNoTables answers an admin call that needs the database while it cannot be reached.
var errNoTables = problem.New(problem.Unavailable, "the policy database is not reachable; try again later")

// fromTable calls f with t's table, or answers errNoTables before there is one.
func fromTable[T any](t *tables, f func(*policy.Table) (T, error)) (T, error) {
	if tb := t.table.Load(); tb != nil {
		v, err := f(tb)
		return v, storeFailed(err)
	}
	var zero T
	return zero, errNoTables
}

// write calls f with the table, or answers errNoTables before there is one.
func (t *tables) write(f func(*policy.Table) error) error {
	if tb := t.table.Load(); tb != nil {
		return storeFailed(f(tb))
	}
	return errNoTables
}

// storeFailed makes a failed database call a 503: the tables hold no logic that can fail on
// its own, so an error there is the database gone or failing (a lost connection, a full
// disk), which is for the caller to try again, not a fault of the gateway's (500). Errors
// that already say what they are stay as they are.
func storeFailed(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*problem.Error](err); ok {
		return err
	}
	return &problem.Error{Code: problem.Unavailable, Message: "the policy database failed; try again later", Err: err}
}

func (t *tables) Load(ctx context.Context) ([]policy.TenantRule, error) {
	return fromTable(t, func(tb *policy.Table) ([]policy.TenantRule, error) { return tb.Load(ctx) })
}

func (t *tables) LoadEdits(ctx context.Context) ([]policy.Edit, error) {
	return fromTable(t, func(tb *policy.Table) ([]policy.Edit, error) { return tb.LoadEdits(ctx) })
}

func (t *tables) Put(ctx context.Context, r policy.TenantRule) error {
	return t.write(func(tb *policy.Table) error { return tb.Put(ctx, r) })
}

func (t *tables) Delete(ctx context.Context, tenant, route string) error {
	return t.write(func(tb *policy.Table) error { return tb.Delete(ctx, tenant, route) })
}

func (t *tables) PutEdit(ctx context.Context, e policy.Edit) error {
	return t.write(func(tb *policy.Table) error { return tb.PutEdit(ctx, e) })
}

func (t *tables) DeleteEdit(ctx context.Context, kind policy.EditKind, id string) error {
	return t.write(func(tb *policy.Table) error { return tb.DeleteEdit(ctx, kind, id) })
}

func (t *tables) ResetEdits(ctx context.Context) error {
	return t.write(func(tb *policy.Table) error { return tb.ResetEdits(ctx) })
}

// authenticator verifies JWTs against the auth service's JWKS (refreshed in the background)
// and resolves API keys over its gRPC API. The connection is made lazily: the gateway may
// start before the auth service, as it does in `boxoffice up`.
func authenticator(s *server.Server, cfg Config) (*authn.Authenticator, error) {
	jwks := authn.NewJWKS(cfg.AuthURL+"/.well-known/jwks.json", authn.JWKSOptions{
		Client: &http.Client{Timeout: 2 * time.Second, Transport: s.Telemetry.HTTPTransport(nil)}, Log: s.Log})
	s.Go("jwks", func(ctx context.Context) error { jwks.Run(ctx); return nil })
	conn, err := grpc.NewClient(cfg.AuthGRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), s.Telemetry.GRPCDialOption())
	if err != nil {
		return nil, fmt.Errorf("auth grpc %s: %w", cfg.AuthGRPCAddr, err)
	}
	s.OnClose(conn.Close)
	return &authn.Authenticator{
		Tokens: authn.NewVerifier(jwks, cfg.Issuer, cfg.Audience, cfg.TokenLeeway),
		Keys:   authn.NewAPIKeys(&authn.GRPCResolver{Client: authv1.NewAuthClient(conn)}, authn.APIKeysOptions{}),
	}, nil
}

// serveAdmin starts the admin API on its own listener. Without ADMIN_TOKEN a token is
// generated and written to a file only its owner can read: logging it would put a
// credential in the logs.
func serveAdmin(ctx context.Context, s *server.Server, cfg Config, live *policy.Live, pools *upstream.Pools, table *tables) error {
	token := cfg.AdminToken
	if token == "" {
		token = rand.Text()
		path := filepath.Join(s.Config.DataDir, "gateway-admin-token")
		if err := os.MkdirAll(s.Config.DataDir, 0o755); err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
		s.Log.WarnContext(ctx, "ADMIN_TOKEN not set: generated an admin token", "file", path)
	}
	var announce func(context.Context, string) error
	if nc := s.NATS; nc != nil {
		announce = func(_ context.Context, subject string) error { return announceChange(nc, subject) }
	}
	_, err := s.Listen("admin", cfg.AdminAddr, admin.New(admin.Options{Live: live, Upstreams: pools, Tenants: table, Edits: table,
		Announce: announce, Token: token, Log: s.Log, Metrics: s.Telemetry.MetricsHandler(), Control: s.Control.Handler()}))
	return err
}

// announceChange tells every replica, this one too, to reload the table subject names.
func announceChange(nc *nats.Conn, subject string) error {
	if err := nc.Publish(subject, nil); err != nil {
		return fmt.Errorf("announce %s: %w", subject, err)
	}
	return nc.Flush()
}

// serviceConfigs turns a snapshot's services into the upstream layer's, with the
// UPSTREAM_<NAME> instances in place of the policy's where set.
func serviceConfigs(snap *policy.Snapshot, overrides map[string][]string) []upstream.ServiceConfig {
	var out []upstream.ServiceConfig
	for _, sv := range snap.Policy.Services {
		c := upstream.ServiceConfig{
			Name: sv.Name, Instances: sv.Instances, DNS: sv.DNS, DNSInterval: sv.DNSInterval.D(),
			MaxInFlight: sv.MaxInFlight, EjectAfter: sv.EjectAfter,
			RetryBudget: upstream.RetryBudget{Ratio: sv.RetryBudget.Ratio, MinPerSecond: sv.RetryBudget.MinPerSecond,
				Window: sv.RetryBudget.Window.D(), Unlimited: sv.RetryBudget.Unlimited},
			Probe: upstream.ProbeConfig{Path: sv.Probe.Path, Interval: sv.Probe.Interval.D(), Timeout: sv.Probe.Timeout.D(),
				HealthyAfter: sv.Probe.HealthyAfter, UnhealthyAfter: sv.Probe.UnhealthyAfter},
		}
		if a := sv.AdaptiveConcurrency; a != nil {
			c.Adaptive = upstream.AdaptiveConcurrency{LatencyTarget: a.LatencyTarget.D(), MinInFlight: a.MinInFlight}
		}
		if t := sv.PanicThreshold; t != nil {
			c.PanicThreshold = *t
			if *t == 0 {
				c.PanicThreshold = -1 // off: the upstream layer reads 0 as its default
			}
		}
		if v, ok := overrides[sv.Name]; ok {
			c.Instances, c.DNS = v, ""
		}
		out = append(out, c)
	}
	return out
}
