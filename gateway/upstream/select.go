package upstream

import "time"

// pick returns the instance to try: of two random candidates other than skip, the one with
// fewer requests in flight (power of two choices: docs/adr/0003-power-of-two-choices.md says
// why). Candidates are the routable instances, and in panic those out only because their
// probes time out. It returns nil when there is none, and whether the service is in panic.
func (pl *pool) pick(now int64, skip *instance, intn func(int) int) (*instance, bool) {
	var buf [16]*instance // no allocation for the usual handful of instances
	cands, panicking := pl.candidates(now, skip, buf[:0])
	switch len(cands) {
	case 0:
		return nil, panicking
	case 1:
		return cands[0], panicking
	}
	i := intn(len(cands))
	j := intn(len(cands) - 1)
	if j >= i {
		j++ // two distinct candidates
	}
	a, b := cands[i], cands[j]
	if b.inFlight.Load() < a.inFlight.Load() {
		return b, panicking
	}
	return a, panicking
}

// candidates appends to cands the instances other than skip the balancer may send to at now,
// and reports whether the service is in panic: fewer than PanicThreshold of its probed
// instances routable, and at least one instance (skip included) out only because its probes
// time out. Skip counts for the share: a retry does not change the service's health.
func (pl *pool) candidates(now int64, skip *instance, cands []*instance) ([]*instance, bool) {
	all := *pl.instances.Load()
	probed, routable := 0, 0
	for _, in := range all {
		if in.routing.Load() == routingPending {
			continue
		}
		probed++
		if in.routable(now) {
			routable++
			if in != skip {
				cands = append(cands, in)
			}
		}
	}
	threshold := pl.cfg.Load().PanicThreshold
	if threshold <= 0 || float64(routable) >= threshold*float64(probed) {
		return cands, false
	}
	panicking := false
	for _, in := range all {
		if in.panicRoutable(now) {
			panicking = true
			if in != skip {
				cands = append(cands, in)
			}
		}
	}
	return cands, panicking
}

// notePanic takes note of what an evaluation of pl's panic at now found, on the hot path:
// when it differs from the recorded state, evaluatePanic settles it.
func (p *Pools) notePanic(pl *pool, now time.Time, panicking bool) {
	if pl.panicking.Load() != panicking {
		p.evaluatePanic(pl, now)
	}
}

// evaluatePanic looks at whether pl is in panic at now, records it, logs entering and
// leaving, and reports it. Evaluations run under pl.mu, each reading the instances afresh,
// so that one that saw an older state cannot undo a newer one and a change is logged once.
func (p *Pools) evaluatePanic(pl *pool, now time.Time) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var buf [16]*instance
	_, panicking := pl.candidates(now.UnixNano(), nil, buf[:0])
	if pl.panicking.Swap(panicking) == panicking {
		return panicking
	}
	if panicking {
		p.log.Warn("upstream service in panic: too few ready instances, sending to those whose probes time out too",
			"service", pl.name, "panic_threshold", pl.cfg.Load().PanicThreshold)
	} else {
		p.log.Info("upstream service out of panic", "service", pl.name)
	}
	return panicking
}
