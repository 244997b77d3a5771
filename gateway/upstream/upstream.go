// Package upstream sends the gateway's requests to the instances of the services behind it.
//
// One pool per service holds that service's instances, from a static list or from DNS
// (re-resolved, so compose replicas and Kubernetes headless services work). For each request
// Forward, in the order a reader of the blueprint expects:
//
//  1. sheds the request at the service's concurrency limit, fixed or adaptive (503);
//  2. picks the less busy of two random instances that are ready and not ejected (in panic,
//     also those whose probes only time out);
//  3. proxies with httputil.ReverseProxy, streaming, with a connect and a response timeout;
//  4. on a connection failure or a timeout, retries once on another instance when the route
//     allows it and the retry budget has room; never once the upstream has started responding.
//
// The files follow those concerns: instances.go (static and DNS discovery), health.go (probes
// and ejection), select.go, shed.go and adaptive.go, budget.go, proxy.go (with
// clientbody.go: a failure of the client's own body is the client's) and metrics.go.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"boxoffice.dev/platform/httpserver"
)

// ServiceConfig describes one upstream service: where its instances are and how they are
// checked and protected. Exactly one of Instances and DNS is set.
type ServiceConfig struct {
	// Name is how routes refer to the service.
	Name string
	// Instances lists base URLs, e.g. "http://127.0.0.1:8102" ("127.0.0.1:8102" means http).
	Instances []string
	// DNS is "host:port" (or "http://host:port") whose A/AAAA records are the instances,
	// re-resolved every DNSInterval.
	DNS string
	// DNSInterval is how often DNS is re-resolved; 0 means 5s.
	DNSInterval time.Duration
	// MaxInFlight is the load-shedding limit for the whole service; 0 means unlimited. With
	// Adaptive on, it is the ceiling of the adaptive limit, and where it starts.
	MaxInFlight int
	// Adaptive lets the limit adapt to the service's answers below MaxInFlight; the zero
	// value keeps MaxInFlight fixed. Update keeps the limit reached when only the knobs
	// change.
	Adaptive AdaptiveConcurrency
	// Probe is the active readiness probe.
	Probe ProbeConfig
	// EjectAfter is how many consecutive failed requests eject an instance; 0 means 3.
	EjectAfter int
	// EjectFor is the first ejection's length, doubled for each further consecutive ejection
	// up to 32 times; 0 means 5s.
	EjectFor time.Duration
	// RetryBudget caps the service's retries; its zero fields take the Options.RetryBudget
	// values. Update changes it live: a new ratio or floor applies to the counts so far, a
	// new window starts the counts afresh.
	RetryBudget RetryBudget
	// PanicThreshold is the share of ready instances below which the service is in panic
	// and the balancer also sends to instances whose probes only time out (see health.go);
	// 0 means 0.5, Envoy's default, and a negative value turns panic mode off. At most 1.
	PanicThreshold float64
}

// DefaultPanicThreshold is ServiceConfig.PanicThreshold's default: panic when fewer than
// half of a service's probed instances are ready.
const DefaultPanicThreshold = 0.5

// ProbeConfig is the active readiness probe of a service's instances. The zero value probes
// GET /readyz every 2s with a 1s timeout, 2 results in a row to change state.
type ProbeConfig struct {
	// Path is probed on each instance; "" means "/readyz". Any 2xx or 3xx status passes.
	Path string
	// Interval is the time between probes of an instance; 0 means 2s.
	Interval time.Duration
	// Timeout bounds one probe; 0 means 1s. A probe that times out fails.
	Timeout time.Duration
	// HealthyAfter is how many passes in a row make a not-ready instance ready; 0 means 2.
	HealthyAfter int
	// UnhealthyAfter is how many failures in a row make a ready instance not ready; 0 means 2.
	UnhealthyAfter int
	// Disabled turns probing off: instances are ready from the start and only passive
	// ejection takes them out.
	Disabled bool
}

// RouteOptions are the per-route knobs of one Forward call.
type RouteOptions struct {
	// ConnectTimeout bounds the TCP connect to an instance; 0 means 2s. It applies to the
	// default transport's dialer only.
	ConnectTimeout time.Duration
	// ResponseTimeout bounds the time from sending the request (connect included) to the
	// response headers; 0 means 30s. The body then streams without a deadline of its own,
	// so long responses and server-sent events are not cut.
	ResponseTimeout time.Duration
	// Retry allows one retry on another instance after a connection failure or a timeout.
	// The caller decides: idempotent methods, or requests carrying an Idempotency-Key.
	Retry bool
}

// RetryBudget caps retries at a share of recent requests, so that an outage cannot make the
// gateway multiply the load on a service (a retry storm). Over any Window, a service gets at
// most Ratio × requests + MinPerSecond × Window seconds retries. The zero value gives the
// defaults, which are Linkerd's and Finagle's.
type RetryBudget struct {
	// Ratio is the share of requests that may be retried; 0 means 0.2.
	Ratio float64
	// MinPerSecond is the floor that lets a quiet service retry at all; 0 means 10.
	MinPerSecond float64
	// Window is how far back requests and retries count; 0 means 10s.
	Window time.Duration
	// Unlimited turns the budget off: every eligible failure is retried once. It is the
	// behaviour the budget exists to prevent, kept so that a playground can show the storm.
	Unlimited bool
}

// Options are what the Pools share. The zero value is usable.
type Options struct {
	// Transport carries requests and probes to instances; nil means a transport built for
	// proxying (per-route connect timeout, many idle connections per instance, no proxy from
	// the environment, no transparent decompression).
	Transport http.RoundTripper
	// Clock gives the time for ejections and the retry budget; nil means time.Now.
	Clock func() time.Time
	// Rand returns a number in [0, n) for the power-of-two-choices pick and must be safe for
	// concurrent use; nil means math/rand/v2.IntN.
	Rand func(n int) int
	// Resolver resolves DNS services; nil means net.DefaultResolver.
	Resolver Resolver
	// MeterProvider receives the metrics (see metrics.go); nil means none.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a client span per attempt; nil means none. The span's context
	// goes to the upstream in traceparent either way.
	TracerProvider trace.TracerProvider
	// Log reports readiness changes, ejections and DNS failures; nil discards.
	Log *slog.Logger
	// RetryBudget applies to each service separately, where the service's own
	// ServiceConfig.RetryBudget leaves a field zero.
	RetryBudget RetryBudget
	// StreamIdle is how long a write of an answer of unknown length (server-sent events, a
	// long download) may wait for the client. The server's write timeout bounds a whole
	// response and would cut a stream that lasts longer; each write of a stream gets this
	// much time afresh instead, so a stream lasts as long as it keeps moving and a client
	// that stops reading is still cut off. 0 means the platform server's write timeout
	// (httpserver.DefaultWriteTimeout).
	StreamIdle time.Duration
}

// Pools is the gateway's upstream layer: one pool per service. Forward, Snapshot and Update
// are safe for concurrent use; the hot path takes no lock shared with other services and
// reads the configuration through atomic pointers.
type Pools struct {
	transport http.RoundTripper
	now       func() time.Time
	intn      func(int) int
	resolver  Resolver
	tracer    trace.Tracer
	log       *slog.Logger
	budget    RetryBudget
	metrics   *metrics
	proxy     *httputil.ReverseProxy
	// streamIdle is Options.StreamIdle; wallNow is time.Now, the clock of connection
	// deadlines, which a test's fake clock must not move.
	streamIdle time.Duration
	wallNow    func() time.Time

	pools atomic.Pointer[map[string]*pool]

	mu     sync.Mutex // serialises Update and the start and stop of pools' loops
	runCtx context.Context
	stops  map[*pool]context.CancelFunc
	loops  sync.WaitGroup
}

// New validates services and builds their pools. Instances with probes enabled receive no
// traffic until a probe has passed: call Run to probe them.
func New(services []ServiceConfig, o Options) (*Pools, error) {
	p := &Pools{
		transport: o.Transport,
		now:       o.Clock,
		intn:      o.Rand,
		resolver:  o.Resolver,
		log:       o.Log,
		budget:    o.RetryBudget.withDefaults(),
		stops:     map[*pool]context.CancelFunc{},

		streamIdle: o.StreamIdle,
		wallNow:    time.Now,
	}
	if p.streamIdle <= 0 {
		p.streamIdle = httpserver.DefaultWriteTimeout
	}
	if p.transport == nil {
		p.transport = newTransport()
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.intn == nil {
		p.intn = rand.IntN
	}
	if p.resolver == nil {
		p.resolver = defaultResolver
	}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tp := o.TracerProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	p.tracer = tp.Tracer("boxoffice.dev/gateway/upstream")
	p.proxy = p.newReverseProxy()
	empty := map[string]*pool{}
	p.pools.Store(&empty)
	var err error
	if p.metrics, err = newMetrics(o.MeterProvider, p.observe, p.panics, p.limits); err != nil {
		return nil, err
	}
	if err := p.Update(services); err != nil {
		return nil, err
	}
	return p, nil
}

// Update replaces the services' configuration without a restart: knobs change in place,
// instances that stay keep their readiness and in-flight counts, new services start probing
// (when Run is running) and removed ones stop. An invalid configuration is rejected whole,
// with an error naming the service and field, and the running one stays.
func (p *Pools) Update(services []ServiceConfig) error {
	cfgs := make([]ServiceConfig, len(services))
	seen := map[string]bool{}
	for i, s := range services {
		if err := s.validate(); err != nil {
			return fmt.Errorf("upstream: services[%d] %q: %w", i, s.Name, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("upstream: services[%d] %q: name: used twice", i, s.Name)
		}
		seen[s.Name] = true
		cfgs[i] = s.withDefaults()
		cfgs[i].RetryBudget = s.RetryBudget.over(p.budget)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	old := *p.pools.Load()
	next := make(map[string]*pool, len(cfgs))
	for _, cfg := range cfgs {
		pl, ok := old[cfg.Name]
		if !ok {
			pl = newPool(cfg.Name, cfg.RetryBudget)
		}
		pl.configure(cfg, p.now())
		next[cfg.Name] = pl
	}
	p.pools.Store(&next)
	for name, pl := range old {
		if _, ok := next[name]; !ok {
			p.stopLoop(pl)
		}
	}
	if p.runCtx != nil {
		for _, pl := range next {
			p.startLoop(pl)
		}
	}
	return nil
}

// Run probes the instances and re-resolves DNS services until ctx is done, then returns once
// every loop has stopped. Call it once.
func (p *Pools) Run(ctx context.Context) {
	p.mu.Lock()
	p.runCtx = ctx
	for _, pl := range *p.pools.Load() {
		p.startLoop(pl)
	}
	p.mu.Unlock()

	<-ctx.Done()

	p.mu.Lock()
	p.runCtx = nil
	for pl := range p.stops {
		p.stopLoop(pl)
	}
	p.mu.Unlock()
	p.loops.Wait()
}

// startLoop starts pl's probe and DNS loop unless it runs already. p.mu is held.
func (p *Pools) startLoop(pl *pool) {
	if _, ok := p.stops[pl]; ok {
		pl.kickLoop()
		return
	}
	ctx, cancel := context.WithCancel(p.runCtx)
	p.stops[pl] = cancel
	p.loops.Go(func() { p.loop(ctx, pl) })
}

// stopLoop stops pl's loop if it runs. p.mu is held.
func (p *Pools) stopLoop(pl *pool) {
	if cancel, ok := p.stops[pl]; ok {
		cancel()
		delete(p.stops, pl)
	}
}

// ServiceStatus is one service as GET /admin/upstreams shows it. Panic says the service has
// too few ready instances and its instances with PanicRoutable set receive traffic too.
type ServiceStatus struct {
	Name        string `json:"name"`
	DNS         string `json:"dns,omitempty"`
	MaxInFlight int    `json:"maxInFlight"` // 0 = unlimited
	// ConcurrencyLimit is the limit in force: MaxInFlight, or the adaptive limit below it.
	ConcurrencyLimit int              `json:"concurrencyLimit"`
	Adaptive         bool             `json:"adaptive"`
	InFlight         int64            `json:"inFlight"`
	Panic            bool             `json:"panic"`
	PanicThreshold   float64          `json:"panicThreshold"` // 0 = panic mode off
	Instances        []InstanceStatus `json:"instances"`
}

// InstanceStatus is one instance as GET /admin/upstreams shows it. Routable is what the
// balancer uses: ready and not ejected. Reason says why an instance is not routable; those
// with PanicRoutable set (out only because their probes time out) are used while the
// service is in panic.
type InstanceStatus struct {
	URL           string    `json:"url"`
	Ready         bool      `json:"ready"`
	Probe         string    `json:"probe"` // pending | ready | not_ready | disabled
	ProbeError    string    `json:"probeError,omitempty"`
	InFlight      int64     `json:"inFlight"`
	Ejected       bool      `json:"ejected"`
	EjectedUntil  time.Time `json:"ejectedUntil,omitzero"`
	Failures      int64     `json:"consecutiveFailures"`
	Routable      bool      `json:"routable"`
	Reason        string    `json:"reason,omitempty"` // pending | not_ready | probe_timeout | probe_unreachable | ejected
	PanicRoutable bool      `json:"panicRoutable"`
}

// Snapshot returns every service, sorted by name, with its instances in discovery order.
func (p *Pools) Snapshot() []ServiceStatus {
	now := p.now()
	pools := *p.pools.Load()
	out := make([]ServiceStatus, 0, len(pools))
	for _, pl := range pools {
		cfg := pl.cfg.Load()
		s := ServiceStatus{Name: pl.name, DNS: cfg.DNS, MaxInFlight: cfg.MaxInFlight, InFlight: pl.shed.inFlight(),
			Panic: p.evaluatePanic(pl, now), PanicThreshold: max(cfg.PanicThreshold, 0)}
		s.ConcurrencyLimit, s.Adaptive = pl.concurrencyLimit(cfg)
		for _, in := range *pl.instances.Load() {
			s.Instances = append(s.Instances, in.status(now))
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ServiceStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// validate checks a service as given, naming the field at fault.
func (s ServiceConfig) validate() error {
	if s.Name == "" {
		return errors.New("name: required")
	}
	switch {
	case len(s.Instances) == 0 && s.DNS == "":
		return errors.New("instances: set instances or dns")
	case len(s.Instances) > 0 && s.DNS != "":
		return errors.New("dns: set instances or dns, not both")
	}
	for i, raw := range s.Instances {
		if _, err := parseInstance(raw); err != nil {
			return fmt.Errorf("instances[%d]: %w", i, err)
		}
	}
	if s.DNS != "" {
		if _, _, _, err := parseDNS(s.DNS); err != nil {
			return fmt.Errorf("dns: %w", err)
		}
	}
	nonNegative := []struct {
		field string
		v     int64
	}{
		{"dnsInterval", int64(s.DNSInterval)},
		{"maxInFlight", int64(s.MaxInFlight)},
		{"ejectAfter", int64(s.EjectAfter)},
		{"ejectFor", int64(s.EjectFor)},
		{"probe.interval", int64(s.Probe.Interval)},
		{"probe.timeout", int64(s.Probe.Timeout)},
		{"probe.healthyAfter", int64(s.Probe.HealthyAfter)},
		{"probe.unhealthyAfter", int64(s.Probe.UnhealthyAfter)},
		{"retryBudget.window", int64(s.RetryBudget.Window)},
	}
	for _, f := range nonNegative {
		if f.v < 0 {
			return fmt.Errorf("%s: must not be negative", f.field)
		}
	}
	if r := s.RetryBudget.Ratio; r < 0 || r > 1 {
		return fmt.Errorf("retryBudget.ratio: %g: want between 0 and 1", r)
	}
	if t := s.PanicThreshold; t > 1 || math.IsNaN(t) {
		return fmt.Errorf("panicThreshold: %g: want at most 1 (negative turns panic mode off)", t)
	}
	if s.RetryBudget.MinPerSecond < 0 {
		return fmt.Errorf("retryBudget.minPerSecond: must not be negative")
	}
	if a := s.Adaptive; a.LatencyTarget < 0 || a.MinInFlight < 0 {
		return errors.New("adaptive: latencyTarget and minInFlight must not be negative")
	} else if a.LatencyTarget > 0 && s.MaxInFlight == 0 {
		return errors.New("adaptive: needs maxInFlight, the ceiling the limit starts from")
	} else if a.LatencyTarget > 0 && a.MinInFlight > s.MaxInFlight {
		return fmt.Errorf("adaptive.minInFlight: %d: want at most maxInFlight (%d)", a.MinInFlight, s.MaxInFlight)
	}
	if s.Probe.Path != "" && s.Probe.Path[0] != '/' {
		return fmt.Errorf("probe.path: %q must start with /", s.Probe.Path)
	}
	return nil
}

// withDefaults fills the zero knobs of a valid configuration.
func (s ServiceConfig) withDefaults() ServiceConfig {
	s.Instances = slices.Clone(s.Instances)
	if s.DNSInterval == 0 {
		s.DNSInterval = 5 * time.Second
	}
	if s.EjectAfter == 0 {
		s.EjectAfter = 3
	}
	if s.EjectFor == 0 {
		s.EjectFor = 5 * time.Second
	}
	if s.PanicThreshold == 0 {
		s.PanicThreshold = DefaultPanicThreshold
	}
	pr := &s.Probe
	if pr.Path == "" {
		pr.Path = "/readyz"
	}
	if pr.Interval == 0 {
		pr.Interval = 2 * time.Second
	}
	if pr.Timeout == 0 {
		pr.Timeout = time.Second
	}
	if pr.HealthyAfter == 0 {
		pr.HealthyAfter = 2
	}
	if pr.UnhealthyAfter == 0 {
		pr.UnhealthyAfter = 2
	}
	return s
}

// over fills b's zero fields from base (a budget with defaults); Unlimited in either wins.
func (b RetryBudget) over(base RetryBudget) RetryBudget {
	if b.Ratio == 0 {
		b.Ratio = base.Ratio
	}
	if b.MinPerSecond == 0 {
		b.MinPerSecond = base.MinPerSecond
	}
	if b.Window == 0 {
		b.Window = base.Window
	}
	b.Unlimited = b.Unlimited || base.Unlimited
	return b
}

func (b RetryBudget) withDefaults() RetryBudget {
	if b.Ratio == 0 {
		b.Ratio = 0.2
	}
	if b.MinPerSecond == 0 {
		b.MinPerSecond = 10
	}
	if b.Window == 0 {
		b.Window = 10 * time.Second
	}
	return b
}
