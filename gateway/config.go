package gateway

import (
	_ "embed"
	"strings"
	"time"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/reload"
	"boxoffice.dev/gateway/upstream/endpoint"
	"boxoffice.dev/platform/config"
)

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
	// fallback share and names itself in the policy's audit trail; "" means random.
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

	// Region is REGION, the region this gateway runs in, as the policy's global shares name
	// it (eu, us-east-1). "" is a single-region deployment: a global limit is then an
	// ordinary one in the one Redis, which is one limit already. See region.go.
	Region string
	// HomeRegion is HOME_REGION, the region whose Redis holds the global counts; required
	// with REGION.
	HomeRegion string
	// HomeRedisURL is HOME_REDIS_URL, the home region's Redis, required outside the home
	// region and refused in it, where REDIS_URL is the home store.
	HomeRedisURL string
	// HomeLimiterTimeout is HOME_LIMITER_TIMEOUT, RATELIMIT_TIMEOUT's bound for a round trip
	// to the home Redis, fail-closed rules' too (default 250ms): it crosses regions, which a
	// bound sized for a Redis in the same zone would miss on every call.
	HomeLimiterTimeout time.Duration
	// RegionRebalance is REGION_REBALANCE, how often demand-split global limits are split
	// again (default 2s): each time, one round trip to the home Redis per replica.
	RegionRebalance time.Duration
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
	checkRegions(r, cfg)
	file, err := loadPolicy(cfg.PolicyFile)
	if err == nil {
		_, err = policy.Compile(file, nil) // what parses may still not build
	}
	if err == nil && cfg.Region != "" {
		err = file.CheckRegion(cfg.Region)
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
		TableRefresh:         r.Duration("RATE_LIMIT_RULE_REFRESH", reload.DefaultTableRefresh),
		PlaygroundURL:        r.URL("PLAYGROUND_URL", "", "http", "https"),
		Upstreams:            map[string][]string{},
		Region:               r.String("REGION", ""),
		HomeRegion:           r.String("HOME_REGION", ""),
		HomeRedisURL:         r.URL("HOME_REDIS_URL", "", "redis", "rediss", "redis+cluster"),
		HomeLimiterTimeout:   r.Duration("HOME_LIMITER_TIMEOUT", 250*time.Millisecond),
		RegionRebalance:      r.Duration("REGION_REBALANCE", 2*time.Second),
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
