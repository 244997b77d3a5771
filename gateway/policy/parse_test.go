package policy

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

// base is a small valid policy (testdata/base.yaml, which the stores and reloaders test
// with too) that the cases below break one field at a time.
var base = readBase()

func readBase() string {
	b, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		panic(err) // the fixture is part of the package
	}
	return string(b)
}

func mustCompile(t *testing.T, doc string) *Snapshot {
	t.Helper()
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	s, err := Compile(p, nil)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

func TestCompileDefaults(t *testing.T) {
	s := mustCompile(t, base)
	set := s.Policy.Settings
	if set.MaxBodyBytes != DefaultMaxBodyBytes || set.ConnectTimeout.D() != time.Second || set.ResponseTimeout.D() != 30*time.Second || set.DefaultPlan != "free" {
		t.Errorf("settings = %+v, want the defaults", set)
	}
	holds := s.Route("holds")
	if holds.ConnectTimeout != time.Second || !holds.Retry || len(holds.Limits) != 1 {
		t.Errorf("route holds = %+v, want default timeouts, retry on, one limit", holds)
	}
	want := ratelimit.Rule{ID: "holds-per-account", Algorithm: ratelimit.TokenBucket, Limit: 5, Window: time.Minute, Burst: 5, Mode: ratelimit.Enforce, OnStoreFailure: ratelimit.FailOpen}
	if got := holds.Limits[0].Rule; got != want {
		t.Errorf("holds-per-account rule = %+v, want %+v", got, want)
	}
	if got := s.Limit("login-per-ip").Rule.OnStoreFailure; got != ratelimit.FailClosed {
		t.Errorf("login-per-ip on_store_failure = %q, want closed", got)
	}
	sv := s.Policy.Services[1]
	if sv.DNSInterval.D() != 5*time.Second || sv.Probe.Path != "/readyz" || sv.EjectAfter != 3 || sv.Probe.UnhealthyAfter != 2 {
		t.Errorf("service auth = %+v, want probe and DNS defaults", sv)
	}
	if want := (RetryBudget{Ratio: 0.2, MinPerSecond: 10, Window: Duration(10 * time.Second)}); sv.RetryBudget != want {
		t.Errorf("service auth retry_budget = %+v, want the defaults %+v", sv.RetryBudget, want)
	}
	if p := s.Plan("internal"); p == nil || !p.Unlimited {
		t.Errorf("Plan(internal) = %+v, want unlimited", p)
	}
	partner := s.Plan("partner")
	if partner.API == nil || partner.Quota == nil || partner.Quota.Window != 30*24*time.Hour || partner.Quota.Algorithm != ratelimit.FixedWindow {
		t.Errorf("Plan(partner) = %+v, want an api bucket and a 30d fixed-window quota", partner)
	}
	if p := s.Plan("enterprise"); p == nil || p.Name != "free" {
		t.Errorf("Plan(enterprise) = %+v, want the default plan free", p)
	}
}

func TestCompileNamesTheField(t *testing.T) {
	tests := []struct {
		name      string
		old, new  string
		wantField string
	}{
		{"unknown limit on a route", "limits: [holds-per-account]", "limits: [nope]", "routes[holds].limits[0]"},
		{"unknown service", "service: inventory", "service: invntory", "routes[holds].service"},
		{"bad auth mode", "auth: user", "auth: jwt", "routes[holds].auth"},
		{"bad rate", "rate: 5/1m", "rate: five/1m", "limits[holds-per-account].rate"},
		{"zero window", "rate: 5/1m", "rate: 5/0s", "limits[holds-per-account].rate"},
		{"bad algorithm", "algorithm: gcra", "algorithm: leaky", "limits[login-per-ip].algorithm"},
		{"bad failure mode", "on_store_failure: closed", "on_store_failure: maybe", "limits[login-per-ip].on_store_failure"},
		{"bad key", "key: user,", "key: users,", "limits[holds-per-account].key"},
		{"bad path", `path: "/v1/events/{id}/holds"`, `path: "v1/events"`, "routes[holds].match.path"},
		{"dot segment", `path: "/v1/events/{id}/holds"`, `path: "/v1/../holds"`, "routes[holds].match.path"},
		{"lower-case method", "method: POST, path: \"/v1", "method: post, path: \"/v1", "routes[holds].match.method"},
		{"bad instance", `"http://127.0.0.1:8104"`, `"ftp://127.0.0.1:8104"`, "services[inventory].instances[0]"},
		{"duplicate route", "id: login", "id: holds", "routes[holds].id"},
		{"same pattern", "path: /v1/auth/login", `path: "/v1/events/{x}/holds"`, "routes[login].match"},
		{"plan on a user route", "auth: user", "auth: user\n    plans: [internal]", "routes[holds].plans"},
		{"bad plan rate", "api: 60/1m", "api: 60", "plans.free.api"},
		{"retry ratio above 1", `name: auth,`, `name: auth, retry_budget: {ratio: 1.5},`, "services[auth].retry_budget.ratio"},
		{"negative retry ratio", `name: auth,`, `name: auth, retry_budget: {ratio: -0.1},`, "services[auth].retry_budget.ratio"},
		{"negative retry floor", `name: auth,`, `name: auth, retry_budget: {min_per_second: -1},`, "services[auth].retry_budget.min_per_second"},
		{"negative retry window", `name: auth,`, `name: auth, retry_budget: {window: -1s},`, "services[auth].retry_budget.window"},
		{"panic threshold above 1", `name: auth,`, `name: auth, panic_threshold: 1.5,`, "services[auth].panic_threshold"},
		{"negative panic threshold", `name: auth,`, `name: auth, panic_threshold: -0.5,`, "services[auth].panic_threshold"},
		{"adaptive without a target", `name: auth,`, `name: auth, max_in_flight: 10, adaptive_concurrency: {min_in_flight: 2},`, "services[auth].adaptive_concurrency.latency_target"},
		{"adaptive without a ceiling", `name: auth,`, `name: auth, adaptive_concurrency: {latency_target: 200ms},`, "services[auth].max_in_flight"},
		{"adaptive floor above the ceiling", `name: auth,`, `name: auth, max_in_flight: 10, adaptive_concurrency: {latency_target: 200ms, min_in_flight: 11},`, "services[auth].adaptive_concurrency.min_in_flight"},
		{"bad strip prefix", "auth: none", "auth: none\n    strip_prefix: /partner", "routes[login].strip_prefix"},
		{"negative lease", "burst: 5}", "burst: 5, lease: -1}", "limits[holds-per-account].lease"},
		{"lease on a concurrency limit", "algorithm: gcra,", "algorithm: concurrency, lease: 2,", "limits[login-per-ip].lease"},
		{"lease on a sliding log", "algorithm: gcra,", "algorithm: sliding_log, lease: 2,", "limits[login-per-ip].lease"},
		{"lease above the burst", "burst: 5}", "burst: 5, lease: 6}", "limits[holds-per-account].lease"},
		{"lease above the limit", "algorithm: gcra, rate: 10/1m", "algorithm: fixed_window, rate: 10/1m, lease: 11", "limits[login-per-ip].lease"},
		{"lease no larger than the cost", "burst: 5}", "burst: 5, cost: 2, lease: 2}", "limits[holds-per-account].lease"},
		{"lease above a shard's budget", "burst: 5}", "burst: 5, shards: 2, lease: 3}", "limits[holds-per-account].lease"},
		{"negative shards", "burst: 5}", "burst: 5, shards: -1}", "limits[holds-per-account].shards"},
		{"more shards than the limit", "burst: 5}", "burst: 5, shards: 6}", "limits[holds-per-account].shards"},
		{"more shards than the burst", "rate: 5/1m, burst: 5}", "rate: 50/1m, burst: 5, shards: 6}", "limits[holds-per-account].shards"},
		{"bad route id", "id: holds", `id: "Holds"`, "routes[0].id"},
		{"negative max body", "services:", "settings: {max_body_bytes: -1}\nservices:", "settings.max_body_bytes"},
		{"negative connect timeout", "services:", "settings: {connect_timeout: -1s}\nservices:", "settings.connect_timeout"},
		{"negative response timeout", "services:", "settings: {response_timeout: -1s}\nservices:", "settings.response_timeout"},
		{"unknown default plan", "services:", "settings: {default_plan: nope}\nservices:", "settings.default_plan"},
		{"duplicate service", "name: auth,", "name: inventory,", "services[inventory].name"},
		{"duplicate limit", "id: login-per-ip,", "id: holds-per-account,", "limits[holds-per-account].id"},
		{"dns and instances", `name: auth, dns: "auth:8101"`, `name: auth, dns: "auth:8101", instances: ["http://127.0.0.1:1"]`, "services[auth].dns"},
		{"negative dns interval", `name: auth,`, `name: auth, dns_interval: -1s,`, "services[auth].dns_interval"},
		{"negative max in flight", `name: auth,`, `name: auth, max_in_flight: -1,`, "services[auth].max_in_flight"},
		{"negative eject after", `name: auth,`, `name: auth, eject_after: -1,`, "services[auth].eject_after"},
		{"relative probe path", `name: auth,`, `name: auth, probe: {path: readyz},`, "services[auth].probe.path"},
		{"negative probe interval", `name: auth,`, `name: auth, probe: {interval: -1s},`, "services[auth].probe.interval"},
		{"negative probe timeout", `name: auth,`, `name: auth, probe: {timeout: -1s},`, "services[auth].probe.timeout"},
		{"negative healthy after", `name: auth,`, `name: auth, probe: {healthy_after: -1},`, "services[auth].probe.healthy_after"},
		{"negative unhealthy after", `name: auth,`, `name: auth, probe: {unhealthy_after: -1},`, "services[auth].probe.unhealthy_after"},
		{"empty plan", "free: {api: 60/1m}", "free: {}", "plans.free"},
		{"negative burst", "burst: 5}", "burst: -1}", "limits[holds-per-account].burst"},
		{"negative cost", "burst: 5}", "burst: 5, cost: -1}", "limits[holds-per-account].cost"},
		{"bad cost header", "burst: 5}", `burst: 5, cost_header: "X Bad"}`, "limits[holds-per-account].cost_header"},
		{"cost header on a concurrency limit", "algorithm: gcra,", "algorithm: concurrency, cost_header: X-Cost,", "limits[login-per-ip].cost_header"},
		{"bad mode", "burst: 5}", "burst: 5, mode: maybe}", "limits[holds-per-account].mode"},
		{"enforce percent above 100", "burst: 5}", "burst: 5, enforce_percent: 101}", "limits[holds-per-account].enforce_percent"},
		{"negative enforce percent", "burst: 5}", "burst: 5, enforce_percent: -1}", "limits[holds-per-account].enforce_percent"},
		{"sync under 10ms", "algorithm: gcra,", "algorithm: fixed_window, sync: 5ms,", "limits[login-per-ip].sync"},
		{"sync of a whole window", "algorithm: gcra,", "algorithm: fixed_window, sync: 1m,", "limits[login-per-ip].sync"},
		{"unknown plan on a route", "auth: none\n    limits: [login-per-ip]", "auth: apikey\n    plans: [gold]\n    limits: [login-per-ip]", "routes[login].plans[0]"},
		{"limit listed twice", "limits: [holds-per-account]", "limits: [holds-per-account, holds-per-account]", "routes[holds].limits[1]"},
		{"negative route connect timeout", "auth: user\n", "auth: user\n    connect_timeout: -1s\n", "routes[holds].connect_timeout"},
		{"negative route response timeout", "auth: user\n", "auth: user\n    response_timeout: -1s\n", "routes[holds].response_timeout"},
		{"unknown global mode", "burst: 5}", "burst: 5, global: {mode: nearest}}", "limits[holds-per-account].global.mode"},
		{"global without a mode", "burst: 5}", "burst: 5, global: {shares: {eu: 100}}}", "limits[holds-per-account].global.mode"},
		{"global static without shares", "burst: 5}", "burst: 5, global: {mode: static}}", "limits[holds-per-account].global.shares"},
		{"global demand without shares", "burst: 5}", "burst: 5, global: {mode: demand}}", "limits[holds-per-account].global.shares"},
		{"global shares short of 100", "burst: 5}", "burst: 5, global: {mode: static, shares: {eu: 70, us: 20}}}", "limits[holds-per-account].global.shares"},
		{"a global share of 0", "burst: 5}", "burst: 5, global: {mode: static, shares: {eu: 0, us: 100}}}", "limits[holds-per-account].global.shares"},
		{"a global share's region with capitals", "burst: 5}", "burst: 5, global: {mode: static, shares: {EU: 70, us: 30}}}", "limits[holds-per-account].global.shares"},
		{"a global share's region with a slash", "burst: 5}", `burst: 5, global: {mode: static, shares: {"eu/west": 70, us: 30}}}`, "limits[holds-per-account].global.shares"},
		{"global approximate without sync", "algorithm: gcra, rate: 10/1m,", "algorithm: fixed_window, rate: 10/1m, global: {mode: approximate},", "limits[login-per-ip].sync"},
		{"sync on a global home limit", "algorithm: gcra, rate: 10/1m,", "algorithm: fixed_window, rate: 10/1m, sync: 100ms, global: {mode: home},", "limits[login-per-ip].sync"},
		{"global concurrency", "algorithm: gcra, rate: 10/1m,", "algorithm: concurrency, rate: 10/1m, global: {mode: home},", "limits[login-per-ip].global"},
		{"global and sharded", "burst: 5}", "burst: 5, shards: 2, global: {mode: home}}", "limits[holds-per-account].global"},
		{"global and leased", "burst: 5}", "burst: 5, lease: 2, global: {mode: home}}", "limits[holds-per-account].global"},
		{"global and queued", "algorithm: gcra, rate: 10/1m,", "algorithm: gcra, rate: 10/1m, queue: {size: 5}, global: {mode: home},", "limits[login-per-ip].global"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compileChanged(t, tt.old, tt.new)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Errorf("Compile() = %v, want an error naming %s", err, tt.wantField)
			}
		})
	}
}

// TestCompileHotKeys: lease and shards on a limit reach its rate limiter rule, and keep
// their names through JSON, as the admin API reads and writes a limit.
func TestCompileHotKeys(t *testing.T) {
	tests := []struct {
		name        string
		old, new    string // the change to base
		id          string
		lease       int
		shards      int
		wantJSONHas string
	}{
		{"none", "", "", "holds-per-account", 0, 0, ""},
		{"lease on a bucket", "burst: 5}", "burst: 5, lease: 5}", "holds-per-account", 5, 0, `"lease":5`},
		{"lease on a fixed window", "algorithm: gcra,", "algorithm: fixed_window, lease: 10,", "login-per-ip", 10, 0, `"lease":10`},
		{"lease on gcra", "algorithm: gcra,", "algorithm: gcra, lease: 4,", "login-per-ip", 4, 0, `"lease":4`},
		{"shards", "burst: 5}", "burst: 5, shards: 4}", "holds-per-account", 0, 4, `"shards":4`},
		{"a lease per shard", "rate: 5/1m, burst: 5}", "rate: 100/1m, shards: 4, lease: 25}", "holds-per-account", 25, 4, `"lease":25,"shards":4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(base, tt.old, tt.new, 1)
			if tt.old != "" && doc == base {
				t.Fatalf("case does not change the policy: %q not found", tt.old)
			}
			s := mustCompile(t, doc)
			r := s.Limit(tt.id).Rule
			if r.Lease != tt.lease || r.Shards != tt.shards {
				t.Errorf("%s rule lease, shards = %d, %d; want %d, %d", tt.id, r.Lease, r.Shards, tt.lease, tt.shards)
			}
			b, err := json.Marshal(s.Limit(tt.id).Limit)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantJSONHas != "" && !strings.Contains(string(b), tt.wantJSONHas) {
				t.Errorf("json.Marshal(%s) = %s, want it to hold %s", tt.id, b, tt.wantJSONHas)
			}
			if tt.wantJSONHas == "" && (strings.Contains(string(b), "lease") || strings.Contains(string(b), "shards")) {
				t.Errorf("json.Marshal(%s) = %s, want no lease or shards when unset", tt.id, b)
			}
		})
	}
}

// TestValidateLimitNamesBareFields: the admin API's PUT /admin/limits/{id} validates a limit
// alone, and its errors name the bare field.
func TestValidateLimitNamesBareFields(t *testing.T) {
	ok := Limit{ID: "hot", Key: "route", Algorithm: "token_bucket", Rate: "100/1m", OnStoreFailure: "open", Mode: "enforce"}
	tests := []struct {
		name      string
		edit      func(l *Limit)
		wantField string // "" for valid
	}{
		{"leased", func(l *Limit) { l.Lease = 10 }, ""},
		{"sharded and leased", func(l *Limit) { l.Shards, l.Lease = 4, 25 }, ""},
		{"negative lease", func(l *Limit) { l.Lease = -1 }, "lease"},
		{"leased concurrency", func(l *Limit) { l.Algorithm, l.Lease = "concurrency", 2 }, "lease"},
		{"leased when hot", func(l *Limit) { l.Lease, l.LeaseWhenHot = 10, true }, ""},
		{"approximate fixed window", func(l *Limit) { l.Algorithm, l.Sync = "fixed_window", Duration(100*time.Millisecond) }, ""},
		{"approximate bucket", func(l *Limit) { l.Sync = Duration(100 * time.Millisecond) }, "sync"},
		{"sync too often", func(l *Limit) { l.Algorithm, l.Sync = "fixed_window", Duration(time.Millisecond) }, "sync"},
		{"sync past the window", func(l *Limit) { l.Algorithm, l.Sync = "sliding_window", Duration(time.Hour) }, "sync"},
		{"approximate and leased", func(l *Limit) { l.Algorithm, l.Sync, l.Lease = "fixed_window", Duration(time.Second), 10 }, "sync"},
		{"lease_when_hot without a lease", func(l *Limit) { l.LeaseWhenHot = true }, "lease_when_hot"},
		{"negative shards", func(l *Limit) { l.Shards = -2 }, "shards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ok
			tt.edit(&l)
			err := ValidateLimit("", l)
			var fe *FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("ValidateLimit(%+v) = %v, want nil", l, err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Errorf("ValidateLimit(%+v) = %v, want an error naming %s", l, err, tt.wantField)
			}
		})
	}
}

func TestParseRejectsUnknownFields(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(base, "burst: 5", "brust: 5", 1)))
	if err == nil || !strings.Contains(err.Error(), "brust") {
		t.Errorf("Parse(misspelt field) = %v, want an error naming brust", err)
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in     string
		limit  int
		window time.Duration
		ok     bool
	}{
		{"5/1m", 5, time.Minute, true},
		{"100/s", 100, time.Second, true},
		{"1000000/30d", 1000000, 30 * 24 * time.Hour, true},
		{"10/500ms", 10, 500 * time.Millisecond, true},
		{"0/1m", 0, 0, false},
		{"5", 0, 0, false},
		{"5/-1s", 0, 0, false},
	}
	for _, tt := range tests {
		limit, window, err := ParseRate(tt.in)
		if (err == nil) != tt.ok || limit != tt.limit || window != tt.window {
			t.Errorf("ParseRate(%q) = %d, %v, %v; want %d, %v, ok %v", tt.in, limit, window, err, tt.limit, tt.window, tt.ok)
		}
	}
}

func TestRefillRate(t *testing.T) {
	tests := []struct {
		perSecond float64
		limit     int
		window    time.Duration
	}{
		{10, 10, time.Second},
		{0.5, 30, time.Minute},
		{1.0 / 120, 30, time.Hour},
		{0.0001, 1, time.Hour},
	}
	for _, tt := range tests {
		if limit, window := refillRate(tt.perSecond); limit != tt.limit || window != tt.window {
			t.Errorf("refillRate(%g) = %d/%v, want %d/%v", tt.perSecond, limit, window, tt.limit, tt.window)
		}
	}
}

func TestTenantOverrides(t *testing.T) {
	p, _ := Parse([]byte(base))
	s, err := Compile(p, []TenantRule{
		{Tenant: "ten_a", Route: "*", Capacity: 100, RefillPerSecond: 10},
		{Tenant: "ten_a", Route: "holds", Capacity: 3, RefillPerSecond: 0.5},
		{Tenant: "ten_b", Route: "gone", Capacity: 3, RefillPerSecond: 1},
		{Tenant: "ten_c", Route: "*", Capacity: 0, RefillPerSecond: 1},
	})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if len(s.Skipped) != 2 || len(s.Tenants) != 2 {
		t.Errorf("Skipped = %q, Tenants = %v; want the unknown route and the zero capacity skipped", s.Skipped, s.Tenants)
	}
	tests := []struct {
		tenant, route string
		wantID        string
		wantBurst     int
	}{
		{"ten_a", "holds", "tenant-api.holds", 3},
		{"ten_a", "login", "tenant-api", 100},
		{"ten_b", "holds", "", 0},
	}
	for _, tt := range tests {
		r, _ := s.TenantOverride(tt.tenant, tt.route)
		if r.ID != tt.wantID || r.Burst != tt.wantBurst {
			t.Errorf("TenantOverride(%s, %s) = %s burst %d, want %q burst %d", tt.tenant, tt.route, r.ID, r.Burst, tt.wantID, tt.wantBurst)
		}
	}
}

// TestDefaultPolicyFile keeps the policy `boxoffice up` ships with valid.
func TestDefaultPolicyFile(t *testing.T) {
	data, err := os.ReadFile("../policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mustCompile(t, string(data))
}

func TestParseRetryBudget(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want RetryBudget
	}{
		{"all fields", "{ratio: 0.1, min_per_second: 1, window: 5s}", RetryBudget{Ratio: 0.1, MinPerSecond: 1, Window: Duration(5 * time.Second)}},
		{"ratio only", "{ratio: 0.5}", RetryBudget{Ratio: 0.5, MinPerSecond: 10, Window: Duration(10 * time.Second)}},
		{"unlimited", "{unlimited: true}", RetryBudget{Ratio: 0.2, MinPerSecond: 10, Window: Duration(10 * time.Second), Unlimited: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, strings.Replace(base, "name: auth,", "name: auth, retry_budget: "+tt.yaml+",", 1))
			if got := s.Policy.Services[1].RetryBudget; got != tt.want {
				t.Errorf("retry_budget %s = %+v, want %+v", tt.yaml, got, tt.want)
			}
		})
	}
}

func TestParsePanicThreshold(t *testing.T) {
	tests := []struct {
		name string
		yaml string // added to service auth
		want float64
	}{
		{"unset: the default", "", DefaultPanicThreshold},
		{"a share", "panic_threshold: 0.3,", 0.3},
		{"0: off", "panic_threshold: 0,", 0},
	}
	value := func(p *float64) any {
		if p == nil {
			return "unset"
		}
		return *p
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, strings.Replace(base, "name: auth,", "name: auth, "+tt.yaml, 1))
			if got := value(s.Policy.Services[1].PanicThreshold); got != tt.want {
				t.Errorf("panic_threshold after %q = %v, want %g", tt.yaml, got, tt.want)
			}
			// A clone (how admin edits and snapshots copy a policy) keeps 0 apart from unset.
			if got := value(s.Policy.Clone().Services[1].PanicThreshold); got != tt.want {
				t.Errorf("Clone() panic_threshold = %v, want %g", got, tt.want)
			}
		})
	}
}

func TestParseAdaptiveConcurrency(t *testing.T) {
	s := mustCompile(t, strings.Replace(base, "name: auth,", "name: auth, max_in_flight: 50, adaptive_concurrency: {latency_target: 250ms, min_in_flight: 5},", 1))
	want := AdaptiveConcurrency{LatencyTarget: Duration(250 * time.Millisecond), MinInFlight: 5}
	for _, p := range []*Policy{s.Policy, s.Policy.Clone()} {
		if got := p.Services[1].AdaptiveConcurrency; got == nil || *got != want {
			t.Errorf("adaptive_concurrency = %+v, want %+v", got, want)
		}
	}
	if got := mustCompile(t, base).Policy.Services[1].AdaptiveConcurrency; got != nil {
		t.Errorf("adaptive_concurrency unset = %+v, want nil (a fixed max_in_flight)", got)
	}
}

// TestCompileQueue: a gcra limit's queue becomes a rule whose burst is the queue's size and
// whose max delay is the queue's, none with nodelay (a meter), and keeps its names through
// JSON, as the admin API reads and writes a limit.
func TestCompileQueue(t *testing.T) {
	const gcra = "algorithm: gcra, rate: 10/1m,"
	tests := []struct {
		name        string
		queue       string
		burst       int
		maxDelay    time.Duration
		wantJSONHas string
	}{
		{"delay", "queue: {size: 20, max_delay: 2s},", 20, 2 * time.Second, `"queue":{"size":20,"max_delay":"2s"}`},
		{"bounded by the size", "queue: {size: 5},", 5, ratelimit.MaxWindow, `"queue":{"size":5}`},
		{"nodelay", "queue: {size: 401, nodelay: true},", 401, 0, `"queue":{"size":401,"nodelay":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, strings.Replace(base, gcra, gcra+" "+tt.queue, 1))
			r := s.Limit("login-per-ip").Rule
			if r.Burst != tt.burst || r.MaxDelay != tt.maxDelay {
				t.Errorf("rule burst, max delay = %d, %v; want %d, %v", r.Burst, r.MaxDelay, tt.burst, tt.maxDelay)
			}
			b, err := json.Marshal(s.Limit("login-per-ip").Limit)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.wantJSONHas) {
				t.Errorf("json.Marshal = %s, want it to hold %s", b, tt.wantJSONHas)
			}
		})
	}
}

// TestCompileQueueNamesTheField: a queue that cannot be held exactly is refused, naming the
// field as the policy spells it.
func TestCompileQueueNamesTheField(t *testing.T) {
	const gcra = "algorithm: gcra, rate: 10/1m,"
	tests := []struct{ name, edit, field string }{
		{"not gcra", "algorithm: token_bucket, rate: 10/1m, queue: {size: 5},", "queue"},
		{"with a burst", gcra + " burst: 5, queue: {size: 5},", "burst"},
		{"no size", gcra + " queue: {max_delay: 1s},", "queue.size"},
		{"negative delay", gcra + " queue: {size: 5, max_delay: -1s},", "queue.max_delay"},
		{"nodelay with a delay", gcra + " queue: {size: 5, max_delay: 1s, nodelay: true},", "queue.max_delay"},
		{"leased", gcra + " lease: 2, queue: {size: 5, max_delay: 1s},", "lease"},
		{"sharded", gcra + " shards: 2, queue: {size: 5},", "shards"},
		{"size too large", gcra + " queue: {size: 1125899906842624, max_delay: 1s},", "queue.size"},
		{"a wait past the clients' timeouts", gcra + " queue: {size: 20},", "queue.size"},
		{"a max delay past them", gcra + " queue: {size: 20, max_delay: 31s},", "queue.max_delay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compileChanged(t, gcra, tt.edit)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "limits[login-per-ip]."+tt.field {
				t.Errorf("Compile() = %v, want an error naming limits[login-per-ip].%s", err, tt.field)
			}
		})
	}
}
