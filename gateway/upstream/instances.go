package upstream

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"boxoffice.dev/gateway/upstream/endpoint"
)

// Resolver looks up the addresses of a DNS service; *net.Resolver is one.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

var _ Resolver = (*net.Resolver)(nil)

var defaultResolver Resolver = net.DefaultResolver

// pool is one service: its configuration, its instances and what protects it. The hot path
// reads cfg and instances through atomic pointers.
type pool struct {
	name       string
	attrs      metric.MeasurementOption            // service
	retryAttrs map[string]metric.MeasurementOption // service, outcome
	cfg        atomic.Pointer[ServiceConfig]
	instances  atomic.Pointer[[]*instance]
	shed       shedder
	adaptive   atomic.Pointer[adaptiveLimit] // nil: the limit is cfg.MaxInFlight
	budget     *retryBudget
	kick       chan struct{} // wakes the loop: resolve and probe now
	panicking  atomic.Bool   // in panic (select.go), as last evaluated

	mu sync.Mutex // serialises changes to the instance list, and panic evaluations
}

func newPool(name string, b RetryBudget) *pool {
	pl := &pool{name: name, budget: newRetryBudget(b), kick: make(chan struct{}, 1)}
	pl.attrs, pl.retryAttrs = poolAttrs(name)
	pl.instances.Store(&[]*instance{})
	return pl
}

// concurrencyLimit is the service's limit in force (0 = unlimited) and whether it adapts.
func (pl *pool) concurrencyLimit(cfg *ServiceConfig) (int, bool) {
	if a := pl.adaptive.Load(); a != nil {
		return a.current(), true
	}
	return cfg.MaxInFlight, false
}

// configure applies cfg (valid, with defaults). A static list replaces the instances at once;
// a DNS service keeps its current instances until the loop has resolved the new name.
func (pl *pool) configure(cfg ServiceConfig, now time.Time) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.cfg.Store(&cfg)
	pl.budget.set(cfg.RetryBudget)
	switch a := pl.adaptive.Load(); {
	case cfg.Adaptive.LatencyTarget == 0:
		pl.adaptive.Store(nil)
	case a == nil:
		pl.adaptive.Store(newAdaptiveLimit(cfg.Adaptive, cfg.MaxInFlight))
	default:
		a.configure(cfg.Adaptive, cfg.MaxInFlight)
	}
	for _, in := range *pl.instances.Load() {
		in.setProbing(!cfg.Probe.Disabled)
	}
	if cfg.DNS == "" {
		targets := make([]*url.URL, len(cfg.Instances))
		for i, raw := range cfg.Instances {
			targets[i], _ = parseInstance(raw) // validated
		}
		pl.replaceLocked(targets, cfg)
	}
	pl.kickLoop()
}

// replaceLocked sets the instance list to targets, in their order. Instances already known
// keep their state; new ones wait for their first probe (or are ready at once without
// probes); requests in flight to a removed instance finish normally. pl.mu is held.
func (pl *pool) replaceLocked(targets []*url.URL, cfg ServiceConfig) {
	old := *pl.instances.Load()
	next := make([]*instance, 0, len(targets))
	for _, t := range targets {
		key := t.String()
		i := slices.IndexFunc(old, func(in *instance) bool { return in.key == key })
		if i >= 0 {
			next = append(next, old[i])
			continue
		}
		if slices.ContainsFunc(next, func(in *instance) bool { return in.key == key }) {
			continue
		}
		next = append(next, newInstance(pl.name, t, !cfg.Probe.Disabled))
	}
	pl.instances.Store(&next)
}

// kickLoop asks the pool's loop to resolve and probe now; it never blocks.
func (pl *pool) kickLoop() {
	select {
	case pl.kick <- struct{}{}:
	default:
	}
}

// parseInstance and parseDNS read a service's instances and DNS name by the rules the policy
// validates them with, so that a service the policy accepts is one the pools accept.
var (
	parseInstance = endpoint.ParseInstance
	parseDNS      = endpoint.ParseDNS
)

// resolve turns a DNS service into instance URLs, sorted so that an unchanged answer in
// another order changes nothing.
func resolve(ctx context.Context, r Resolver, dns string) ([]*url.URL, error) {
	scheme, host, port, err := parseDNS(dns)
	if err != nil {
		return nil, err
	}
	addrs, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	hosts := make([]string, 0, len(addrs))
	for _, a := range addrs {
		hosts = append(hosts, net.JoinHostPort(a.IP.String(), port))
	}
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	out := make([]*url.URL, len(hosts))
	for i, h := range hosts {
		out[i] = &url.URL{Scheme: scheme, Host: h}
	}
	return out, nil
}

// instance is one address of a service. The hot path reads and counts through atomics;
// mu guards the slower probe and ejection bookkeeping.
type instance struct {
	url      *url.URL
	key      string                              // url.String(), shown in X-Boxoffice-Upstream and the snapshot
	attrs    metric.MeasurementOption            // service, instance
	outcomes map[string]metric.MeasurementOption // service, instance, outcome

	inFlight     atomic.Int64
	routing      atomic.Uint32 // what the probes allow: routingReady always without probes
	ejectedUntil atomic.Int64  // Unix nanoseconds; passive ejection ends then
	failures     atomic.Int64  // consecutive failed requests
	ejections    atomic.Int64  // consecutive ejections, for the back-off

	mu       sync.Mutex
	probe    probeState
	streak   int // consecutive probe results that disagree with probe
	probeErr string
	out      probeResult // why probeNotReady keeps it out (health.go); resultPassed when ready
	timeouts int         // consecutive probes that timed out
}

func newInstance(service string, u *url.URL, probing bool) *instance {
	in := &instance{url: u, key: u.String(), probe: probePending}
	in.attrs, in.outcomes = instanceAttrs(service, in.key)
	in.setProbing(probing)
	return in
}

// routable reports whether the balancer may send to in at now (Unix nanoseconds).
func (in *instance) routable(now int64) bool {
	return in.routing.Load() == routingReady && in.ejectedUntil.Load() <= now
}

// panicRoutable reports whether the balancer may send to in at now while the service is in
// panic, though in is not routable: out only because its probes time out, and not ejected.
func (in *instance) panicRoutable(now int64) bool {
	return in.routing.Load() == routingSlow && in.ejectedUntil.Load() <= now
}

func (in *instance) status(now time.Time) InstanceStatus {
	in.mu.Lock()
	probe, probeErr, out := in.probe, in.probeErr, in.out
	in.mu.Unlock()
	at := now.UnixNano()
	s := InstanceStatus{
		URL:           in.key,
		Ready:         in.routing.Load() == routingReady,
		Probe:         probe.String(),
		ProbeError:    probeErr,
		InFlight:      in.inFlight.Load(),
		Failures:      in.failures.Load(),
		Routable:      in.routable(at),
		PanicRoutable: in.panicRoutable(at),
	}
	if until := in.ejectedUntil.Load(); until > at {
		s.Ejected, s.EjectedUntil = true, time.Unix(0, until)
	}
	switch { // the first that applies; Probe and ProbeError still say what the probes found
	case probe == probePending:
		s.Reason = "pending"
	case s.Ejected:
		s.Reason = "ejected"
	case probe == probeNotReady:
		s.Reason = out.reason()
	}
	return s
}
