package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream/endpoint"
)

// Parse decodes a policy file. Unknown fields are errors, so a misspelt knob is reported
// instead of silently ignored. Parse does not validate: Compile does, and refuses the empty
// Policy that an empty or comment-only file decodes to.
func Parse(data []byte) (*Policy, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Policy
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse policy: %w", err)
	}
	return &p, nil
}

// FieldError is a policy that does not validate, naming the field at fault the way the file
// spells it: routes[holds].match.path, limits[login-per-ip].rate.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Defaults of the settings.
const (
	DefaultMaxBodyBytes    = 1 << 20
	DefaultConnectTimeout  = time.Second
	DefaultResponseTimeout = 30 * time.Second
	DefaultPlan            = "free"
)

// Defaults of a service's retry budget.
const (
	DefaultRetryRatio        = 0.2
	DefaultRetryMinPerSecond = 10
	DefaultRetryWindow       = 10 * time.Second
)

// DefaultPanicThreshold is a service's panic_threshold when unset: Envoy's 50 %.
const DefaultPanicThreshold = 0.5

// The default settings.local_ip_limit: far above what a person or a well-behaved client
// sends from one address, so it only cuts floods. (The playground's all-in-one mode sends
// every simulated fan from 127.0.0.1, which the pre-limit never counts.)
const (
	DefaultLocalIPRate  = "1000/s"
	DefaultLocalIPBurst = 2000
)

// withDefaults returns a copy of p with every zero setting given its default.
func (p *Policy) withDefaults() *Policy {
	c := p.Clone()
	s := &c.Settings
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = Duration(DefaultConnectTimeout)
	}
	if s.ResponseTimeout == 0 {
		s.ResponseTimeout = Duration(DefaultResponseTimeout)
	}
	if s.DefaultPlan == "" {
		s.DefaultPlan = DefaultPlan
	}
	if s.LocalIPLimit == nil {
		s.LocalIPLimit = &LocalLimit{Rate: DefaultLocalIPRate, Burst: DefaultLocalIPBurst}
	}
	for i := range c.Services {
		sv := &c.Services[i]
		if sv.DNS != "" && sv.DNSInterval == 0 {
			sv.DNSInterval = Duration(5 * time.Second)
		}
		if sv.EjectAfter == 0 {
			sv.EjectAfter = 3
		}
		if sv.PanicThreshold == nil {
			t := DefaultPanicThreshold
			sv.PanicThreshold = &t
		}
		rb := &sv.RetryBudget
		if rb.Ratio == 0 {
			rb.Ratio = DefaultRetryRatio
		}
		if rb.MinPerSecond == 0 {
			rb.MinPerSecond = DefaultRetryMinPerSecond
		}
		if rb.Window == 0 {
			rb.Window = Duration(DefaultRetryWindow)
		}
		pr := &sv.Probe
		if pr.Path == "" {
			pr.Path = "/readyz"
		}
		if pr.Interval == 0 {
			pr.Interval = Duration(2 * time.Second)
		}
		if pr.Timeout == 0 {
			pr.Timeout = Duration(time.Second)
		}
		if pr.HealthyAfter == 0 {
			pr.HealthyAfter = 1
		}
		if pr.UnhealthyAfter == 0 {
			pr.UnhealthyAfter = 2
		}
	}
	for i := range c.Limits {
		l := &c.Limits[i]
		if l.Algorithm == "" {
			l.Algorithm = string(ratelimit.TokenBucket)
		}
		if l.Mode == "" {
			l.Mode = string(ratelimit.Enforce)
		}
		if l.OnStoreFailure == "" {
			l.OnStoreFailure = string(ratelimit.FailOpen)
		}
	}
	return c
}

// name is what ids of routes, limits, services and plans may hold: they appear in header
// values, metric labels and Redis keys.
var name = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func checkName(field, v string) error {
	if !name.MatchString(v) {
		return fieldErr(field, "%q: want lower-case letters, digits, '.', '_' or '-', at most 64", v)
	}
	return nil
}

// ref names an element of a list by its id, or by index when it has none.
func ref(list string, i int, id string) string {
	if name.MatchString(id) {
		return list + "[" + id + "]"
	}
	return list + "[" + strconv.Itoa(i) + "]"
}

// validate checks a policy with its defaults applied and returns the first problem.
func (p *Policy) validate() error {
	s := p.Settings
	switch {
	case s.MaxBodyBytes < 0:
		return fieldErr("settings.max_body_bytes", "%d: want 0 or more", s.MaxBodyBytes)
	case s.ConnectTimeout < 0:
		return fieldErr("settings.connect_timeout", "want a positive duration")
	case s.ResponseTimeout < 0:
		return fieldErr("settings.response_timeout", "want a positive duration")
	}
	if _, ok := p.Plans[s.DefaultPlan]; len(p.Plans) > 0 && !ok {
		return fieldErr("settings.default_plan", "plan %q is not defined under plans", s.DefaultPlan)
	}
	if _, err := localIPRule(s.LocalIPLimit); err != nil {
		return err
	}
	services := map[string]bool{}
	for i, sv := range p.Services {
		at := ref("services", i, sv.Name)
		if err := validateService(at, sv); err != nil {
			return err
		}
		if services[sv.Name] {
			return fieldErr(at+".name", "%q appears twice", sv.Name)
		}
		services[sv.Name] = true
	}
	for name, pl := range p.Plans {
		if err := validatePlan("plans."+name, name, pl); err != nil {
			return err
		}
	}
	limits := map[string]bool{}
	for i, l := range p.Limits {
		at := ref("limits", i, l.ID)
		if err := ValidateLimit(at, l); err != nil {
			return err
		}
		if limits[l.ID] {
			return fieldErr(at+".id", "%q appears twice", l.ID)
		}
		limits[l.ID] = true
	}
	if err := validateHierarchies(p.Limits); err != nil {
		return err
	}
	if len(p.Routes) == 0 {
		// An empty file (truncated by a save still in progress, or a botched deploy) would
		// answer 404 to everything: keep the running policy instead.
		return fieldErr("routes", "want at least one route: a policy without routes serves nothing")
	}
	routes := map[string]bool{}
	for i, r := range p.Routes {
		at := ref("routes", i, r.ID)
		if err := p.validateRoute(at, r, services, limits); err != nil {
			return err
		}
		if routes[r.ID] {
			return fieldErr(at+".id", "%q appears twice", r.ID)
		}
		routes[r.ID] = true
	}
	if err := validateRouteChains(p.Routes, p.Limits); err != nil {
		return err
	}
	for i, r := range p.Routes {
		if err := p.validateGraphQL(ref("routes", i, r.ID)+".graphql", r); err != nil {
			return err
		}
	}
	return nil
}

func validateService(at string, sv Service) error {
	if err := checkName(at+".name", sv.Name); err != nil {
		return err
	}
	// The upstream layer's own rules (package endpoint): a service this accepts, the pools
	// accept, so that an admin edit or a reload is refused here with the field named rather
	// than by the pools after validation.
	for j, inst := range sv.Instances {
		if _, err := endpoint.ParseInstance(inst); err != nil {
			return fieldErr(fmt.Sprintf("%s.instances[%d]", at, j), "%v", err)
		}
	}
	switch {
	case len(sv.Instances) == 0 && sv.DNS == "":
		return fieldErr(at+".instances", "set instances or dns")
	case len(sv.Instances) > 0 && sv.DNS != "":
		return fieldErr(at+".dns", "set instances or dns, not both")
	}
	if sv.DNS != "" {
		if _, _, _, err := endpoint.ParseDNS(sv.DNS); err != nil {
			return fieldErr(at+".dns", "%v", err)
		}
	}
	switch {
	case sv.DNSInterval < 0:
		return fieldErr(at+".dns_interval", "want a positive duration")
	case sv.MaxInFlight < 0:
		return fieldErr(at+".max_in_flight", "%d: want 0 (unlimited) or more", sv.MaxInFlight)
	case sv.EjectAfter < 0:
		return fieldErr(at+".eject_after", "%d: want 1 or more", sv.EjectAfter)
	case sv.AdaptiveConcurrency != nil && sv.AdaptiveConcurrency.LatencyTarget <= 0:
		return fieldErr(at+".adaptive_concurrency.latency_target", "want a positive duration")
	case sv.AdaptiveConcurrency != nil && sv.MaxInFlight == 0:
		return fieldErr(at+".max_in_flight", "an adaptive concurrency limit needs max_in_flight, the ceiling it starts from")
	case sv.AdaptiveConcurrency != nil && (sv.AdaptiveConcurrency.MinInFlight < 0 || sv.AdaptiveConcurrency.MinInFlight > sv.MaxInFlight):
		return fieldErr(at+".adaptive_concurrency.min_in_flight", "%d: want 0 (meaning 1) to max_in_flight (%d)", sv.AdaptiveConcurrency.MinInFlight, sv.MaxInFlight)
	case sv.RetryBudget.Ratio <= 0 || sv.RetryBudget.Ratio > 1:
		return fieldErr(at+".retry_budget.ratio", "%g: want a share above 0 and at most 1", sv.RetryBudget.Ratio)
	case sv.RetryBudget.MinPerSecond < 0:
		return fieldErr(at+".retry_budget.min_per_second", "%g: want 0 (the default) or more", sv.RetryBudget.MinPerSecond)
	case sv.RetryBudget.Window <= 0:
		return fieldErr(at+".retry_budget.window", "want a positive duration")
	case sv.PanicThreshold != nil && !(*sv.PanicThreshold >= 0 && *sv.PanicThreshold <= 1):
		return fieldErr(at+".panic_threshold", "%g: want a share from 0 (off) to 1", *sv.PanicThreshold)
	case !strings.HasPrefix(sv.Probe.Path, "/"):
		return fieldErr(at+".probe.path", "%q: want a path starting with /", sv.Probe.Path)
	case sv.Probe.Interval <= 0:
		return fieldErr(at+".probe.interval", "want a positive duration")
	case sv.Probe.Timeout <= 0:
		return fieldErr(at+".probe.timeout", "want a positive duration")
	case sv.Probe.HealthyAfter < 1:
		return fieldErr(at+".probe.healthy_after", "%d: want 1 or more", sv.Probe.HealthyAfter)
	case sv.Probe.UnhealthyAfter < 1:
		return fieldErr(at+".probe.unhealthy_after", "%d: want 1 or more", sv.Probe.UnhealthyAfter)
	}
	return nil
}

func validatePlan(at, plan string, pl Plan) error {
	if err := checkName(at, plan); err != nil {
		return err
	}
	if pl.Unlimited {
		return nil
	}
	if pl.API == "" && pl.Quota == "" {
		return fieldErr(at, "want api, quota or both, or \"unlimited\"")
	}
	for _, f := range []struct{ field, rate string }{{"api", pl.API}, {"quota", pl.Quota}} {
		if f.rate == "" {
			continue
		}
		if _, _, err := ParseRate(f.rate); err != nil {
			return fieldErr(at+"."+f.field, "%v", err)
		}
	}
	return nil
}

// ValidateLimit checks one limit on its own; at prefixes the field names of its errors
// (at "" names the bare fields, as the admin API's PUT /admin/limits/{id} does).
func ValidateLimit(at string, l Limit) error {
	field := func(f string) string {
		if at == "" {
			return f
		}
		return at + "." + f
	}
	if err := checkName(field("id"), l.ID); err != nil {
		return err
	}
	for _, reserved := range []string{planRulePrefix, tenantRuleID, LocalIPRuleID} {
		if strings.HasPrefix(l.ID, reserved) {
			return fieldErr(field("id"), "%q: ids starting with %q are reserved for the rules of plans, tenant overrides and settings", l.ID, reserved)
		}
	}
	parts, err := ParseKey(l.Key)
	if err != nil {
		return fieldErr(field("key"), "%v", err)
	}
	// Authentication removes the API key from the request before the limits read it: such a
	// limit would count nothing.
	if slices.Contains(parts, KeyPart{Kind: KeyHeader, Name: HeaderAPIKey}) {
		return fieldErr(field("key"), "%q: the gateway removes %s once it has read it: count by apikey", l.Key, HeaderAPIKey)
	}
	alg, err := ratelimit.ParseAlgorithm(l.Algorithm)
	if err != nil {
		return fieldErr(field("algorithm"), "%q: want one of %v", l.Algorithm, ratelimit.Algorithms)
	}
	limit, window, err := ParseRate(l.Rate)
	if err != nil {
		return fieldErr(field("rate"), "%v", err)
	}
	switch {
	case l.Burst < 0:
		return fieldErr(field("burst"), "%d: want 0 (the limit) or more", l.Burst)
	case l.Cost < 0:
		return fieldErr(field("cost"), "%d: want 0 (one) or more", l.Cost)
	case l.CostHeader != "" && !validHeaderName(l.CostHeader):
		return fieldErr(field("cost_header"), "%q is not a header name", l.CostHeader)
	case l.CostHeader != "" && alg == ratelimit.Concurrency:
		return fieldErr(field("cost_header"), "a concurrency limit counts requests in flight, not a cost")
	}
	switch ratelimit.FailureMode(l.OnStoreFailure) {
	case ratelimit.FailOpen, ratelimit.FailClosed:
	default:
		return fieldErr(field("on_store_failure"), "%q: want open or closed", l.OnStoreFailure)
	}
	switch ratelimit.Mode(l.Mode) {
	case ratelimit.Enforce, ratelimit.Shadow:
	default:
		return fieldErr(field("mode"), "%q: want enforce or shadow", l.Mode)
	}
	if p := l.EnforcePercent; p != nil && (*p < 0 || *p > 100) {
		return fieldErr(field("enforce_percent"), "%d: want 0 to 100", *p)
	}
	if err := validateQueue(field, l, alg, limit, window); err != nil {
		return err
	}
	if err := validateHotKey(field, l, alg, limit); err != nil {
		return err
	}
	if sync := time.Duration(l.Sync); sync != 0 {
		if err := ratelimit.CheckSync(sync, window); err != nil {
			return fieldErr(field("sync"), "%v", err)
		}
	}
	if err := validateLevel(field, l, window); err != nil {
		return err
	}
	if err := validateGlobal(field, l.Global); err != nil {
		return err
	}
	rule := limitRule(l, alg, limit, window)
	if err := rule.Validate(); err != nil {
		return fieldErr(field(limitField(err, l.Queue != nil)), "%v", err)
	}
	return nil
}

// limitField names the field of a limit that the rate limiter's validation refused: rate
// holds the rule's limit and window, and a queue its burst and max delay.
func limitField(err error, queued bool) string {
	if re, ok := errors.AsType[*ratelimit.RuleError](err); ok {
		switch {
		case re.Field == "max_delay":
			return "queue.max_delay"
		case re.Field == "burst" && queued:
			return "queue.size"
		}
		switch re.Field {
		case "burst", "cost", "lease", "lease_when_hot", "shards", "sync", "algorithm", "mode", "enforce_percent", "on_store_failure", "id", "parent", "ceiling", "reserve",
			"global", "global.mode", "global.shares":
			return re.Field
		}
	}
	return "rate"
}

// validateHotKey checks a limit's lease and shards against its algorithm and budget, as
// Limit.Lease and Limit.Shards describe them.
func validateHotKey(field func(string) string, l Limit, alg ratelimit.Algorithm, limit int) error {
	switch {
	case l.Lease < 0:
		return fieldErr(field("lease"), "%d: want 0 (no lease) or more", l.Lease)
	case l.Shards < 0:
		return fieldErr(field("shards"), "%d: want 0 (one key) or more", l.Shards)
	}
	// capacity is the most one request may take at once: the bucket's size for token_bucket
	// and gcra, the window's limit otherwise.
	capacity, burst := limit, l.Burst
	if l.Queue != nil {
		burst = l.Queue.Size
	}
	if (alg == ratelimit.TokenBucket || alg == ratelimit.GCRA) && burst > 0 {
		capacity = burst
	}
	if most := min(limit, capacity); l.Shards > most {
		return fieldErr(field("shards"), "%d: want at most %d, so that every shard has a budget of at least one", l.Shards, most)
	}
	if l.Lease == 0 {
		if l.LeaseWhenHot {
			return fieldErr(field("lease_when_hot"), "true without a lease: set lease, the batch a hot key takes")
		}
		return nil
	}
	switch alg {
	case ratelimit.Concurrency:
		return fieldErr(field("lease"), "a concurrency slot is released where it was taken: it cannot be leased")
	case ratelimit.SlidingLog:
		return fieldErr(field("lease"), "sliding_log is chosen for an exact count, which a lease gives up: use sliding_window")
	}
	if cost := max(1, l.Cost); l.Lease <= cost {
		return fieldErr(field("lease"), "%d: want more than a request's cost (%d), or 0: a smaller batch saves no round trip", l.Lease, cost)
	}
	// Sharded gives the first shards the remainder: the last has the smallest budget.
	if most := capacity / max(1, l.Shards); l.Lease > most {
		return fieldErr(field("lease"), "%d: want at most %d (the limit, or burst, per shard): a batch is taken whole, and a larger one never passes", l.Lease, most)
	}
	return nil
}

func (p *Policy) validateRoute(at string, r Route, services, limits map[string]bool) error {
	if err := checkName(at+".id", r.ID); err != nil {
		return err
	}
	if r.Match.Method != "" && r.Match.Method != "*" && !validMethod(r.Match.Method) {
		return fieldErr(at+".match.method", "%q: want an upper-case method such as GET, or * for any", r.Match.Method)
	}
	pat, err := parsePattern(r.Match.Path)
	if err != nil {
		return fieldErr(at+".match.path", "%v", err)
	}
	if !services[r.Service] {
		return fieldErr(at+".service", "%q is not one of the services", r.Service)
	}
	switch r.Auth {
	case AuthUser, AuthAPIKey, AuthOptional, AuthNone:
	default:
		return fieldErr(at+".auth", "%q: want user, apikey, optional or none", r.Auth)
	}
	for j, plan := range r.Plans {
		if _, ok := p.Plans[plan]; !ok {
			return fieldErr(fmt.Sprintf("%s.plans[%d]", at, j), "plan %q is not defined under plans", plan)
		}
	}
	if len(r.Plans) > 0 && (r.Auth == AuthUser || r.Auth == AuthNone) {
		return fieldErr(at+".plans", "plans come from API keys: use auth apikey or optional")
	}
	if r.StripPrefix != "" && (!strings.HasPrefix(pat.literalPrefix(), r.StripPrefix) || !strings.HasPrefix(r.StripPrefix, "/") || strings.HasSuffix(r.StripPrefix, "/")) {
		return fieldErr(at+".strip_prefix", "%q: want a leading part of the path without a trailing /", r.StripPrefix)
	}
	for j, id := range r.Limits {
		if !limits[id] {
			return fieldErr(fmt.Sprintf("%s.limits[%d]", at, j), "limit %q is not defined under limits", id)
		}
		if slices.Index(r.Limits, id) != j {
			return fieldErr(fmt.Sprintf("%s.limits[%d]", at, j), "limit %q is listed twice", id)
		}
	}
	switch {
	case r.ConnectTimeout < 0:
		return fieldErr(at+".connect_timeout", "want a positive duration")
	case r.ResponseTimeout < 0:
		return fieldErr(at+".response_timeout", "want a positive duration")
	}
	return nil
}

var methodToken = regexp.MustCompile(`^[A-Z]+$`)

func validMethod(m string) bool { return methodToken.MatchString(m) }

func validHeaderName(h string) bool {
	return h != "" && !strings.ContainsAny(h, " \t\r\n:") && http.CanonicalHeaderKey(h) != ""
}

// ParseRate reads "<limit>/<window>": "5/1m", "100/s", "1000000/30d". The window is a Go
// duration, with "d" for days allowed, and a bare unit means one of it.
func ParseRate(s string) (limit int, window time.Duration, err error) {
	n, w, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want <limit>/<window> such as 5/1m", s)
	}
	limit, err = strconv.Atoi(n)
	if err != nil || limit < 1 {
		return 0, 0, fmt.Errorf("%q: the limit must be a whole number of at least 1", s)
	}
	window, err = parseWindow(w)
	if err != nil || window <= 0 {
		return 0, 0, fmt.Errorf("%q: the window must be a positive duration such as 1s, 1m, 30d", s)
	}
	return limit, window, nil
}

func parseWindow(w string) (time.Duration, error) {
	if w != "" && (w[0] < '0' || w[0] > '9') {
		w = "1" + w
	}
	if days, ok := strings.CutSuffix(w, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, err
		}
		if n > int(math.MaxInt64/int64(24*time.Hour)) { // would wrap around, perhaps to a positive window
			return 0, fmt.Errorf("%s: more days than a duration holds", w)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(w)
}

// LoadFile reads and parses a policy file.
func LoadFile(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
