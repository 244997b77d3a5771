package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// An instance leaves the balancer two ways: active probes (GET /readyz) decide readiness,
// and passive ejection takes out an instance whose requests fail (5xx answers and failures
// of the client's own body are not failures). A failed probe carries its reason:
// not_ready and probe_unreachable keep traffic away; probe_timeout says only "slow", and
// below PanicThreshold the balancer routes to such instances anyway. See
// docs/lessons/failure-modes.md, "An instance of a service is down, slow or not ready", and
// docs/adr/0007-panic-routing-over-slow-instances.md for the choices and their costs.

// probeState is what the probes last concluded about an instance.
type probeState uint8

const (
	probePending  probeState = iota // not probed yet: no traffic
	probeReady                      // serving
	probeNotReady                   // no traffic, or traffic in panic when only its probes time out
	probeDisabled                   // probes off: ready
)

func (s probeState) String() string {
	return [...]string{"pending", "ready", "not_ready", "disabled"}[s]
}

// probeResult is what one probe said, and why a not-ready instance is out.
type probeResult uint8

const (
	resultPassed      probeResult = iota // a 2xx or 3xx status in time
	resultNotReady                       // another status: not ready in its own words
	resultTimeout                        // no answer in time: slow
	resultUnreachable                    // refused, reset or broken off: dead or cut off
)

// reason is the InstanceStatus.Reason of an instance out for r.
func (r probeResult) reason() string {
	return [...]string{"", "not_ready", "probe_timeout", "probe_unreachable"}[r]
}

// routing is what the probes let the balancer do with an instance, read on the hot path
// (an alias, so that it sits in an atomic.Uint32).
type routing = uint32

const (
	routingPending routing = iota // not probed yet: no traffic, not counted for panic
	routingReady                  // serving, or probes off
	routingSlow                   // out only because its probes time out: traffic in panic
	routingOut                    // out: answered not ready, or unreachable
)

// maxBackoffShift caps the ejection back-off at EjectFor × 2^5.
const maxBackoffShift = 5

// loop keeps pl's instances and their readiness current until ctx is done: it re-resolves a
// DNS service every DNSInterval and probes every Probe.Interval, and does both at once when
// kicked (a new configuration). The timers are the only real time it reads.
func (p *Pools) loop(ctx context.Context, pl *pool) {
	probeT, dnsT := time.NewTimer(0), time.NewTimer(0)
	defer probeT.Stop()
	defer dnsT.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pl.kick:
			p.resolveDNS(ctx, pl)
			p.probeAll(ctx, pl)
			probeT.Reset(pl.cfg.Load().Probe.Interval)
			dnsT.Reset(pl.cfg.Load().DNSInterval)
		case <-dnsT.C:
			if p.resolveDNS(ctx, pl) {
				p.probeAll(ctx, pl) // new instances get traffic only once probed
			}
			dnsT.Reset(pl.cfg.Load().DNSInterval)
		case <-probeT.C:
			p.probeAll(ctx, pl)
			probeT.Reset(pl.cfg.Load().Probe.Interval)
		}
	}
}

// resolveDNS refreshes a DNS service's instances and reports whether new ones appeared. A
// failed or empty answer keeps the last known instances: a DNS hiccup must not empty a pool,
// and instances that are really gone fail their probes.
func (p *Pools) resolveDNS(ctx context.Context, pl *pool) bool {
	cfg := pl.cfg.Load()
	if cfg.DNS == "" {
		return false
	}
	lookup, cancel := context.WithTimeout(ctx, min(cfg.DNSInterval, 5*time.Second))
	defer cancel()
	targets, err := resolve(lookup, p.resolver, cfg.DNS)
	if err == nil && len(targets) == 0 {
		err = fmt.Errorf("resolve %s: no addresses", cfg.DNS)
	}
	if err != nil {
		if ctx.Err() == nil { // not shutting down
			p.log.Warn("upstream dns failed, keeping the last instances", "service", pl.name, "error", err)
		}
		return false
	}
	return pl.replaceResolved(cfg.DNS, targets)
}

// replaceResolved applies a DNS answer for name unless the configuration moved on while it
// was resolved. It reports whether an instance was added.
func (pl *pool) replaceResolved(name string, targets []*url.URL) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	cfg := *pl.cfg.Load()
	if cfg.DNS != name {
		return false
	}
	known := map[string]bool{}
	for _, in := range *pl.instances.Load() {
		known[in.key] = true
	}
	pl.replaceLocked(targets, cfg)
	for _, in := range *pl.instances.Load() {
		if !known[in.key] {
			return true
		}
	}
	return false
}

// probeAll probes every instance of pl at once, waits for the results, and then looks at
// whether the service entered or left panic.
func (p *Pools) probeAll(ctx context.Context, pl *pool) {
	cfg := pl.cfg.Load()
	if cfg.Probe.Disabled {
		return
	}
	var wg sync.WaitGroup
	for _, in := range *pl.instances.Load() {
		wg.Go(func() {
			res, err := p.probe(ctx, in, cfg.Probe)
			if ctx.Err() != nil {
				return // shutting down or removed: the result says nothing about in
			}
			if changed, now := in.observeProbe(res, err, cfg.Probe); changed {
				if now == routingReady {
					p.log.Info("upstream instance ready", "service", pl.name, "instance", in.key)
				} else {
					p.log.Warn("upstream instance not ready", "service", pl.name, "instance", in.key, "reason", in.why().reason(), "error", err)
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() == nil {
		p.evaluatePanic(pl, p.now())
	}
}

// probe GETs pr.Path on in; a 2xx or 3xx status within pr.Timeout passes. The error, nil
// when it passed, says what went wrong.
func (p *Pools) probe(ctx context.Context, in *instance, pr ProbeConfig) (probeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, pr.Timeout)
	defer cancel()
	ctx = withConnectTimeout(ctx, pr.Timeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.key+pr.Path, nil)
	if err != nil {
		return resultUnreachable, fmt.Errorf("probe request: %w", err)
	}
	req.Header.Set("User-Agent", "boxoffice-gateway-probe")
	res, err := p.transport.RoundTrip(req)
	if err != nil {
		return probeFailure(err), fmt.Errorf("probe: %w", err)
	}
	// Drain a little so the connection is reused; a probe answer is small.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
	res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode >= 400 {
		return resultNotReady, fmt.Errorf("probe: status %d", res.StatusCode)
	}
	return resultPassed, nil
}

// probeFailure classifies a probe that got no response: a timeout (the probe's deadline, or
// a connect that timed out) is slow, anything else (refused, reset, closed) unreachable.
func probeFailure(err error) probeResult {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return resultTimeout
	}
	return resultUnreachable
}

// observeProbe records a probe's result and its error (nil when it passed). It reports
// whether the instance's routing changed, and what it is now.
func (in *instance) observeProbe(res probeResult, detail error, pr ProbeConfig) (changed bool, now routing) {
	in.mu.Lock()
	defer in.mu.Unlock()
	before := in.routing.Load()
	if in.probe == probeDisabled {
		return false, before
	}
	pass := res == resultPassed
	in.probeErr = ""
	if detail != nil {
		in.probeErr = detail.Error()
	}

	// Why it would be out: a reason that keeps traffic away at once, a timeout only when
	// nothing else was said since the last pass, or after UnhealthyAfter in a row.
	switch res {
	case resultPassed:
		in.timeouts = 0
	case resultTimeout:
		in.timeouts++
		if in.out == resultPassed || in.timeouts >= pr.UnhealthyAfter {
			in.out = resultTimeout
		}
	default:
		in.timeouts, in.out = 0, res
	}

	// Whether it is ready, with hysteresis.
	prev := in.probe
	switch {
	case in.probe == probePending:
		in.probe = probeNotReady
		if pass {
			in.probe = probeReady
		}
	case (in.probe == probeReady) == pass:
		in.streak = 0
	default:
		in.streak++
		need := pr.HealthyAfter
		if in.probe == probeReady {
			need = pr.UnhealthyAfter
		}
		if in.streak >= need && pass {
			in.probe = probeReady
		} else if in.streak >= need {
			in.probe = probeNotReady
		}
	}
	if in.probe != prev {
		in.streak = 0
	}
	if in.probe == probeReady && pass {
		in.out, in.timeouts = resultPassed, 0
	}
	now = in.routingLocked()
	in.routing.Store(now)
	return now != before, now
}

// routingLocked derives the hot path's view from the probe state. in.mu is held.
func (in *instance) routingLocked() routing {
	switch {
	case in.probe == probePending:
		return routingPending
	case in.probe == probeReady, in.probe == probeDisabled:
		return routingReady
	case in.out == resultTimeout:
		return routingSlow
	}
	return routingOut
}

// why returns what keeps in out, resultPassed when nothing does.
func (in *instance) why() probeResult {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.probe == probeNotReady {
		return in.out
	}
	return resultPassed
}

// setProbing switches probing on or off for in. Turning it off makes in ready; turning it
// on keeps a serving instance serving until the probes say otherwise.
func (in *instance) setProbing(on bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case !on && in.probe != probeDisabled:
		in.probe, in.probeErr, in.streak = probeDisabled, "", 0
	case on && in.probe == probeDisabled:
		in.probe, in.streak = probeReady, 0
	}
	if in.probe == probeReady || in.probe == probeDisabled {
		in.out, in.timeouts = resultPassed, 0
	}
	in.routing.Store(in.routingLocked())
}

// succeeded records a request that got a response from in.
func (in *instance) succeeded() {
	if in.failures.Load() != 0 {
		in.failures.Store(0)
	}
	if in.ejections.Load() != 0 {
		in.ejections.Store(0)
	}
}

// failed records a failed request to in and ejects it after cfg.EjectAfter in a row. It
// returns how long in is ejected for, 0 when it was not ejected by this failure.
func (in *instance) failed(now time.Time, cfg *ServiceConfig) time.Duration {
	if in.failures.Add(1) < int64(cfg.EjectAfter) {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ejectedUntil.Load() > now.UnixNano() {
		return 0 // concurrent failures: one ejection is enough
	}
	d := cfg.EjectFor << min(in.ejections.Load(), maxBackoffShift)
	in.ejections.Add(1)
	in.failures.Store(0)
	in.ejectedUntil.Store(now.Add(d).UnixNano())
	return d
}
