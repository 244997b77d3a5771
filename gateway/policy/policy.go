// Package policy is the gateway's policy as data: the routes it serves, the services behind
// them, the limits and quotas it enforces and the plans partners are on.
//
// A policy is read from YAML (Parse), given its defaults, validated with errors that name the
// field at fault ("routes[holds].match.path: …") and compiled into a Snapshot, the read-only
// form the request path uses without a lock or the database. Live holds the current one; a
// change that does not validate leaves it running (docs/lessons/gateway.md, "Policy is
// data"). The package is the model alone, tested and read without a database, network or file
// watch: the tables live in policystore, the file watcher and the table follower in reload.
//
// The file's shape:
//
//	settings: {max_body_bytes: 1048576, connect_timeout: 1s, response_timeout: 30s}
//	services:
//	  - {name: inventory, instances: [http://127.0.0.1:8104], max_in_flight: 200}
//	routes:
//	  - id: holds
//	    match: {method: POST, path: /v1/events/{id}/holds}
//	    service: inventory
//	    auth: user
//	    limits: [holds-per-account, api-per-ip]
//	limits:
//	  - {id: holds-per-account, key: user, algorithm: token_bucket, rate: 5/1m, burst: 5}
//	  - {id: search-per-route, key: route, rate: 10000/1m, lease: 50}  # a hot key: Limit.Lease
//	plans:
//	  free:     {api: 60/1m}
//	  partner:  {api: 10000/1m, quota: 1000000/30d}
//	  internal: unlimited
package policy

import (
	"encoding/json"
	"fmt"

	"boxoffice.dev/platform/config"
)

// Policy is a whole policy document. The zero value routes nothing, and so does not validate:
// a policy needs at least one route.
type Policy struct {
	Settings Settings        `yaml:"settings" json:"settings"`
	Services []Service       `yaml:"services" json:"services"`
	Routes   []Route         `yaml:"routes" json:"routes"`
	Limits   []Limit         `yaml:"limits" json:"limits"`
	Plans    map[string]Plan `yaml:"plans" json:"plans"`
}

// Settings apply to every route. Zero fields take the defaults listed.
type Settings struct {
	// MaxBodyBytes caps request bodies; 0 means 1 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes"`
	// ConnectTimeout and ResponseTimeout are the routes' defaults; 0 means 1s and 30s.
	ConnectTimeout  Duration `yaml:"connect_timeout" json:"connect_timeout"`
	ResponseTimeout Duration `yaml:"response_timeout" json:"response_timeout"`
	// DefaultPlan is the plan of an API key whose plan this policy does not list; "" means
	// "free", so an unknown plan is limited rather than unlimited.
	DefaultPlan string `yaml:"default_plan" json:"default_plan"`
	// LocalIPLimit is the pre-limit on each client address (rule LocalIPRuleID), decided in
	// each replica's memory before authentication and before any limit that costs a round
	// trip to the shared store, so that a flood from one address is cut cheaply. nil means
	// 1000/s with a burst of 2000; "off" turns it off. Loopback clients are never counted.
	LocalIPLimit *LocalLimit `yaml:"local_ip_limit" json:"local_ip_limit,omitempty"`
}

// LocalLimit is a token bucket decided in each gateway replica's own memory, never in the
// shared store: with N replicas a client may pass N times its rate. In YAML either a mapping
// {rate, burst} or the word "off".
type LocalLimit struct {
	// Off turns the limit off.
	Off bool `yaml:"-" json:"off,omitempty"`
	// Rate is "<limit>/<window>", as a limit's: 1000/s.
	Rate string `yaml:"rate" json:"rate,omitempty"`
	// Burst is the bucket size; 0 means the limit.
	Burst int `yaml:"burst" json:"burst,omitempty"`
}

// UnmarshalYAML accepts "off" or a mapping.
func (l *LocalLimit) UnmarshalYAML(unmarshal func(any) error) error {
	var word string
	if err := unmarshal(&word); err == nil {
		if word != "off" {
			return fmt.Errorf("local limit %q: want \"off\" or a mapping with rate and burst", word)
		}
		*l = LocalLimit{Off: true}
		return nil
	}
	type plain LocalLimit
	return unmarshal((*plain)(l))
}

// Service is a named upstream and how its instances are found, probed and protected.
type Service struct {
	Name string `yaml:"name" json:"name"`
	// Instances are base URLs with a port and nothing after it: "http://127.0.0.1:8102",
	// "https://…", or "127.0.0.1:8102" for http (package endpoint's rules, the upstream
	// layer's). The gateway's UPSTREAM_<NAME> variable replaces them.
	Instances []string `yaml:"instances" json:"instances,omitempty"`
	// DNS is a host:port ("http://host:port" or "https://host:port" to choose the scheme)
	// re-resolved every DNSInterval (0 means 5s); set it or Instances, not both.
	DNS         string   `yaml:"dns" json:"dns,omitempty"`
	DNSInterval Duration `yaml:"dns_interval" json:"dns_interval,omitempty"`
	// MaxInFlight sheds requests above this many in flight to the service; 0 = unlimited.
	MaxInFlight int `yaml:"max_in_flight" json:"max_in_flight"`
	// AdaptiveConcurrency lets that limit adapt, at or below MaxInFlight, to how fast the
	// service answers; unset keeps MaxInFlight fixed.
	AdaptiveConcurrency *AdaptiveConcurrency `yaml:"adaptive_concurrency" json:"adaptive_concurrency,omitempty"`
	Probe               Probe                `yaml:"probe" json:"probe"`
	// EjectAfter consecutive failures take an instance out of rotation; 0 means 3.
	EjectAfter int `yaml:"eject_after" json:"eject_after"`
	// RetryBudget caps the gateway's retries to the service.
	RetryBudget RetryBudget `yaml:"retry_budget" json:"retry_budget"`
	// PanicThreshold is the share of ready instances below which the gateway also sends to
	// the instances whose readiness probes time out (panic mode), rather than answer 503 to
	// everything while a service is overloaded. Unset means 0.5; 0 turns panic mode off.
	PanicThreshold *float64 `yaml:"panic_threshold" json:"panic_threshold,omitempty"`
}

// AdaptiveConcurrency is an adaptive concurrency limit (upstream.AdaptiveConcurrency): it
// starts at the service's max_in_flight, drops by a tenth when answers come slower than
// LatencyTarget (or as 503s, or not at all), and climbs back by one per limit's worth of
// good answers while the service is busy.
type AdaptiveConcurrency struct {
	// LatencyTarget is the slowest answer, to the response headers, that counts as healthy.
	LatencyTarget Duration `yaml:"latency_target" json:"latency_target"`
	// MinInFlight is the floor of the limit; 0 means 1.
	MinInFlight int `yaml:"min_in_flight" json:"min_in_flight,omitempty"`
}

// RetryBudget caps a service's retries at a share of its recent requests, so that an outage
// cannot make the gateway multiply the load on it: over any Window, at most
// Ratio × requests + MinPerSecond × Window seconds retries. Zero fields take the defaults,
// 0.2, 10/s and 10s (Linkerd's), so a ratio of 0 cannot be asked for: turn a route's retry
// off instead.
type RetryBudget struct {
	// Ratio is the share of requests that may be retried, above 0 and at most 1.
	Ratio float64 `yaml:"ratio" json:"ratio"`
	// MinPerSecond is the floor that lets a quiet service retry at all.
	MinPerSecond float64 `yaml:"min_per_second" json:"min_per_second"`
	// Window is how far back requests and retries count.
	Window Duration `yaml:"window" json:"window"`
	// Unlimited turns the budget off: every eligible failure is retried once. It is what the
	// budget exists to prevent, kept so that the playground can show a retry storm.
	Unlimited bool `yaml:"unlimited" json:"unlimited,omitempty"`
}

// Probe is the active readiness probe of a service's instances. Zero fields take the
// defaults: /readyz every 2s, 1s timeout, ready after 1 success, not ready after 2 failures.
type Probe struct {
	Path           string   `yaml:"path" json:"path"`
	Interval       Duration `yaml:"interval" json:"interval"`
	Timeout        Duration `yaml:"timeout" json:"timeout"`
	HealthyAfter   int      `yaml:"healthy_after" json:"healthy_after"`
	UnhealthyAfter int      `yaml:"unhealthy_after" json:"unhealthy_after"`
}

// AuthMode says how a route authenticates its caller.
type AuthMode string

// The authentication modes.
const (
	// AuthUser requires a JWT from the auth service (Authorization: Bearer).
	AuthUser AuthMode = "user"
	// AuthAPIKey requires an X-Api-Key, resolved to a tenant and its plan.
	AuthAPIKey AuthMode = "apikey"
	// AuthOptional verifies a JWT or API key when one is sent and lets anonymous callers in.
	// A credential that is sent but invalid is refused: a client that believes it is logged
	// in should learn that it is not.
	AuthOptional AuthMode = "optional"
	// AuthNone ignores credentials; identity headers are still stripped.
	AuthNone AuthMode = "none"
)

// HeaderAPIKey carries a partner's API key, for routes with auth apikey or optional. The
// gateway removes it from the request once read: a limit counts by the key as apikey.
const HeaderAPIKey = "X-Api-Key"

// Route sends requests matching Match to Service after authenticating them by Auth and
// checking Limits.
type Route struct {
	ID    string `yaml:"id" json:"id"`
	Match Match  `yaml:"match" json:"match"`
	// Service names the upstream, one of the policy's Services.
	Service string   `yaml:"service" json:"service"`
	Auth    AuthMode `yaml:"auth" json:"auth"`
	// Plans, when set, are the only plans allowed on the route (e.g. [internal] for admin
	// routes); callers on another plan, or without one, get 403.
	Plans []string `yaml:"plans" json:"plans,omitempty"`
	// StripPrefix is removed from the path before forwarding: /partner/v1/events reaches the
	// service as /v1/events.
	StripPrefix string `yaml:"strip_prefix" json:"strip_prefix,omitempty"`
	// Limits are the ids of the limits checked, all in one round trip.
	Limits []string `yaml:"limits" json:"limits"`
	// ConnectTimeout and ResponseTimeout override Settings for this route.
	ConnectTimeout  Duration `yaml:"connect_timeout" json:"connect_timeout,omitempty"`
	ResponseTimeout Duration `yaml:"response_timeout" json:"response_timeout,omitempty"`
	// Retry allows one retry on another instance after a connection failure or timeout, for
	// idempotent methods and requests with an Idempotency-Key only. nil means true.
	Retry *bool `yaml:"retry" json:"retry,omitempty"`
	// GraphQL marks a GraphQL endpoint and says what its mutations spend; nil for a route
	// that is not one.
	GraphQL *GraphQL `yaml:"graphql" json:"graphql,omitempty"`
}

// Match selects requests by method and path. Path is a pattern in the style of Go 1.22's
// ServeMux: literal segments, {name} for one segment, {name...} as the last segment for the
// rest of the path. Method "" or "*" matches every method; GET also matches HEAD.
type Match struct {
	Method string `yaml:"method" json:"method"`
	Path   string `yaml:"path" json:"path"`
}

// Limit is one rate limit or quota: who it counts (Key), how (Algorithm, Rate, Burst), what a
// request costs, and what happens when it is exceeded or cannot be checked.
type Limit struct {
	ID string `yaml:"id" json:"id"`
	// Key says whose budget a request spends: user, ip, net (the client's /24 or /64),
	// apikey, tenant, plan (the API key's plan), global (one budget for all), route,
	// header:<Name>, json:<field>, or several joined by "+" (user+route, json:email+net). A
	// request that lacks a part (an anonymous caller on a per-user limit) is not counted.
	Key string `yaml:"key" json:"key"`
	// Algorithm is one of the rate limiter's; "" means token_bucket.
	Algorithm string `yaml:"algorithm" json:"algorithm"`
	// Rate is "<limit>/<window>": 5/1m, 100/s, 1000000/30d. For concurrency, "<n>/<lease
	// lifetime>": 10/30s.
	Rate string `yaml:"rate" json:"rate"`
	// Burst is the bucket size of token_bucket and gcra; 0 means the limit.
	Burst int `yaml:"burst" json:"burst,omitempty"`
	// Cost is what one request spends; 0 means 1.
	Cost int `yaml:"cost" json:"cost,omitempty"`
	// CostHeader names a response header whose integer value is charged once the response
	// is known (the assistant's X-Boxoffice-Tokens). The request itself then spends Cost,
	// so it passes only while some budget is left.
	CostHeader string `yaml:"cost_header" json:"cost_header,omitempty"`
	// OnStoreFailure is open (the default: a local fallback at limit/N) or closed (deny
	// while the store is unreachable: login, password reset).
	OnStoreFailure string `yaml:"on_store_failure" json:"on_store_failure"`
	// Mode is enforce (the default) or shadow (decide and report, never deny).
	Mode string `yaml:"mode" json:"mode"`
	// EnforcePercent, 0 to 100, enforces an enforce-mode limit for that share of its keys
	// only, picked by a hash of the limit's id and the key (ratelimit.Enforces); the others
	// are decided as in shadow mode and counted as unenforced_denied. nil means 100. Mode
	// shadow overrides it, keeping it for when the mode is enforce again: a pause of a
	// rollout (docs/lessons/rate-limiting.md, "Gradual enforcement").
	EnforcePercent *int `yaml:"enforce_percent" json:"enforce_percent,omitempty"`
	// Lease, for a very hot key, lets each replica take this many units from Redis in one
	// call and spend them locally, at the price of an overshoot of at most replicas × Lease
	// per key (docs/lessons/hot-keys.md). 0, the default, asks Redis every time. It must be
	// above a request's cost and at most the limit (the burst for token_bucket and gcra, per
	// shard when sharded); not for concurrency or sliding_log.
	Lease int `yaml:"lease" json:"lease,omitempty"`
	// LeaseWhenHot leases only the keys the gateway finds hot (a large share of its
	// decisions; GET /admin/hotkeys lists them), so the overshoot a lease allows is paid only
	// where it saves round trips. Needs Lease.
	LeaseWhenHot bool `yaml:"lease_when_hot" json:"lease_when_hot,omitempty"`
	// Sync, when set, decides the limit in each replica's memory and syncs its counts with
	// Redis this often, one round trip for all keys (docs/lessons/distributed.md, "Counting
	// locally, syncing often"): far fewer Redis calls, and an overshoot of up to
	// (replicas−1) × what one replica admits between syncs. fixed_window and sliding_window only.
	Sync Duration `yaml:"sync" json:"sync,omitempty"`
	// Shards, above 1, splits the budget over this many Redis keys with their own hash tags,
	// so a Redis Cluster spreads a key too hot for one node (docs/lessons/hot-keys.md). At
	// most the limit (and the burst): every shard needs a budget of one. 0 or 1, the default,
	// keeps one key; switching shards on or off starts from fresh keys, forgetting once the
	// budget already spent.
	Shards int `yaml:"shards" json:"shards,omitempty"`
	// Queue, on a gcra limit, delays requests over the rate in a bounded queue instead of
	// refusing them (Queue); nil refuses them at once. Its size replaces burst.
	Queue *Queue `yaml:"queue" json:"queue,omitempty"`
	// Parent makes the limit a level of a hierarchy under the limit with that id (platform
	// → plan → tenant): a route that lists the limit spends its whole chain, in one atomic
	// decision (docs/lessons/algorithms.md, "Hierarchies that borrow"). token_bucket or gcra
	// only, enforced, without lease or shards.
	Parent string `yaml:"parent" json:"parent,omitempty"`
	// Ceiling is the rate the limit may reach by borrowing what its parent leaves unused,
	// such as 300/s; "" means its own rate, no borrowing. At most its parent's.
	Ceiling string `yaml:"ceiling" json:"ceiling,omitempty"`
	// Reserve, on a parent, is the part of its budget that borrowers leave to requests
	// within their share; 0 means a tenth of its burst (its limit without one), at least 1.
	Reserve int `yaml:"reserve" json:"reserve,omitempty"`
	// Global makes the limit one limit across the deployment's regions (Global); nil keeps
	// it a limit per region. Not for concurrency, nor with lease, shards, parent or queue.
	Global *Global `yaml:"global" json:"global,omitempty"`
}

// Plan is what a partner's API key is allowed. In YAML either a mapping {api, quota} or the
// word "unlimited".
type Plan struct {
	// Unlimited plans skip every limit: they are BoxOffice's own components.
	Unlimited bool `yaml:"-" json:"unlimited,omitempty"`
	// API is a rate per tenant across all routes (token bucket, burst = limit).
	API string `yaml:"api" json:"api,omitempty"`
	// Quota is a long-window allowance per tenant (fixed window), e.g. 1000000/30d.
	Quota string `yaml:"quota" json:"quota,omitempty"`
}

// UnmarshalYAML accepts "unlimited" or a mapping.
func (p *Plan) UnmarshalYAML(unmarshal func(any) error) error {
	var word string
	if err := unmarshal(&word); err == nil {
		if word != "unlimited" {
			return fmt.Errorf("plan %q: want \"unlimited\" or a mapping with api and quota", word)
		}
		*p = Plan{Unlimited: true}
		return nil
	}
	type plain Plan
	return unmarshal((*plain)(p))
}

// Duration is a time.Duration written as "250ms" or "5s" in YAML and JSON.
type Duration = config.Duration

// Clone returns a deep copy of p, for edits that must not touch a policy in use.
func (p *Policy) Clone() *Policy {
	b, _ := json.Marshal(p) // plain data: never fails
	var c Policy
	_ = json.Unmarshal(b, &c)
	if c.Plans == nil && p.Plans != nil {
		c.Plans = map[string]Plan{}
	}
	for name, pl := range p.Plans { // Unlimited has no yaml name, but json keeps it
		c.Plans[name] = pl
	}
	return &c
}
