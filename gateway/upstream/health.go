package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// An instance leaves the balancer two ways, and comes back the same ways:
//
//   - Active probes (GET /readyz) decide readiness. An instance the probes have not seen yet
//     is pending and gets no traffic: the first probe decides it, later ones need
//     HealthyAfter or UnhealthyAfter results in a row to change it, so one slow probe does
//     not flap it.
//   - Passive ejection: EjectAfter consecutive failed requests (connection refused or
//     reset, timeouts) take it out for EjectFor, doubled for each consecutive ejection up to
//     32 times, back to the first length after a request succeeds. It catches a dead
//     instance between two probes, or when probes are disabled. Statuses from the upstream,
//     5xx included, are not failures: a broken endpoint or an injected error rate must not
//     eject healthy instances, and an overloaded service sheds with 503 on purpose.

// probeState is what the probes last concluded about an instance.
type probeState uint8

const (
	probePending  probeState = iota // not probed yet: no traffic
	probeReady                      // serving
	probeNotReady                   // no traffic
	probeDisabled                   // probes off: ready
)

func (s probeState) String() string {
	return [...]string{"pending", "ready", "not_ready", "disabled"}[s]
}

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

// probeAll probes every instance of pl at once and waits for the results.
func (p *Pools) probeAll(ctx context.Context, pl *pool) {
	cfg := pl.cfg.Load()
	if cfg.Probe.Disabled {
		return
	}
	var wg sync.WaitGroup
	for _, in := range *pl.instances.Load() {
		wg.Go(func() {
			err := p.probe(ctx, in, cfg.Probe)
			if ctx.Err() != nil {
				return // shutting down or removed: the result says nothing about in
			}
			if changed, ready := in.observeProbe(err, cfg.Probe); changed {
				if ready {
					p.log.Info("upstream instance ready", "service", pl.name, "instance", in.key)
				} else {
					p.log.Warn("upstream instance not ready", "service", pl.name, "instance", in.key, "error", err)
				}
			}
		})
	}
	wg.Wait()
}

// probe GETs pr.Path on in; a 2xx or 3xx status within pr.Timeout passes.
func (p *Pools) probe(ctx context.Context, in *instance, pr ProbeConfig) error {
	ctx, cancel := context.WithTimeout(ctx, pr.Timeout)
	defer cancel()
	ctx = withConnectTimeout(ctx, pr.Timeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.key+pr.Path, nil)
	if err != nil {
		return fmt.Errorf("probe request: %w", err)
	}
	req.Header.Set("User-Agent", "boxoffice-gateway-probe")
	res, err := p.transport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	// Drain a little so the connection is reused; a probe answer is small.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
	res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode >= 400 {
		return fmt.Errorf("probe: status %d", res.StatusCode)
	}
	return nil
}

// observeProbe records a probe result (nil = passed) and reports whether readiness changed
// and what it is now.
func (in *instance) observeProbe(result error, pr ProbeConfig) (changed, ready bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.probe == probeDisabled {
		return false, true
	}
	pass := result == nil
	in.probeErr = ""
	if !pass {
		in.probeErr = result.Error()
	}
	before := in.probe
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
	if in.probe != before {
		in.streak = 0
	}
	in.ready.Store(in.probe == probeReady)
	return in.probe != before, in.probe == probeReady
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
	in.ready.Store(in.probe == probeReady || in.probe == probeDisabled)
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
