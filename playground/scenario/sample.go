package scenario

import (
	"context"
	"slices"
	"time"
)

// sample records one Sample per second, as each second ends, until the load is done and the
// last second with anything in it is recorded, or ctx ends.
func (r *Run) sample(ctx context.Context, loadDone <-chan struct{}) {
	for i := 0; ; i++ {
		end := r.rec.Start().Add(time.Duration(i+1) * time.Second)
		if wait := end.Sub(r.o.Now()); wait > 0 {
			select {
			case <-loadDone:
				// The load ended inside this second: record it now rather than wait.
			default:
				if r.o.Sleep(ctx, wait) != nil {
					return
				}
			}
		}
		r.publish(r.sampleAt(ctx, i))
		select {
		case <-loadDone:
			if time.Duration(i+1)*time.Second >= r.rec.Elapsed() {
				return
			}
		default:
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// sampleAt builds second i's Sample from the recorder, the backend's gauges, the gateway's
// decisions and the driver's counters.
func (r *Run) sampleAt(ctx context.Context, i int) Sample {
	sec := r.rec.Second(i)
	s := Sample{
		T: i, Phase: r.profile.Phases[r.phaseAt(time.Duration(i)*time.Second)].Name,
		Tally:    tally(sec.Total()),
		InFlight: r.eng.InFlight(),
		Counters: sec.Counters,
	}
	// The gateway's decisions are read beside the other gauges, not after them: all describe
	// the second that just ended.
	type totals struct{ byPath, byOutcome map[string]float64 }
	decided := make(chan totals, 1)
	go func() {
		dctx, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
		defer cancel()
		byPath, byOutcome := r.sys.decisionTotals(dctx)
		decided <- totals{byPath, byOutcome}
	}()
	if svc := r.sc.Backend.Service; svc != "" {
		pctx, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
		l, err := r.sys.load(pctx, svc)
		cancel()
		if err != nil {
			s.BackendInFlight, s.BackendQueued, s.BackendCapacity = -1, -1, -1
		} else {
			s.BackendInFlight, s.BackendQueued, s.BackendCapacity = l.inFlight, l.queued, l.capacity
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	for k, v := range r.driver.poll(pctx, r) {
		s.Counters[k] = v
	}
	cancel()
	d := <-decided
	for k, v := range r.outcomes.next(d.byOutcome) {
		if r.sc.hasCounter(k) {
			if s.Counters == nil {
				s.Counters = map[string]float64{}
			}
			s.Counters[k] = v
		}
	}
	if len(s.Counters) == 0 {
		s.Counters = nil
	}
	s.Decisions = r.decisions.next(d.byPath)
	return s
}

// publish appends s to the series and hands it to every subscriber that has room.
func (r *Run) publish(s Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.series = append(r.series, s)
	for ch := range r.subs {
		select {
		case ch <- s:
		default: // a slow subscriber misses a second rather than holding the run
		}
	}
}

// finish computes the result, checks the expectations of a run that was not stopped, and
// ends every subscription.
func (r *Run) finish(stopped bool) {
	phases, totals := r.stats()
	var outcomes []Outcome
	if !stopped {
		outcomes = check(r.profile.Expect, phases, totals)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.result.Totals = *totals
	r.result.Phases = nil
	for _, ph := range r.profile.Phases {
		r.result.Phases = append(r.result.Phases, *phases[ph.Name])
	}
	r.result.Expectations = outcomes
	r.result.Stopped = stopped
	for ch := range r.subs {
		close(ch)
	}
	r.subs = nil
}

// stats sums the recorder's seconds by phase (leaving out each phase's settle time) and over
// the whole run. A run stopped early is summed up to where it got: its unreached phases
// count no seconds, so their per-second rates are 0, not diluted by time that never ran.
// Only the seconds with something in them are read, so a run planned to last for days
// costs what it recorded to sum, not what it planned.
func (r *Run) stats() (map[string]*Stats, *Stats) {
	gauges := map[string]bool{}
	for _, c := range r.sc.Counters {
		if c.Kind == "gauge" {
			gauges[c.Name] = true
		}
	}
	// The counters of a second are its sample's: the recorder's counts and the driver's
	// polled gauges together.
	r.mu.Lock()
	counters := map[int]map[string]float64{}
	decisions := map[int]map[string]float64{}
	for _, s := range r.series {
		counters[s.T] = s.Counters
		decisions[s.T] = s.Decisions
	}
	r.mu.Unlock()
	seen := r.rec.Seconds()
	for i := range counters { // every sampled second: decisions has the same keys
		seen = append(seen, i)
	}
	slices.Sort(seen)
	seen = slices.Compact(seen)

	ran := (r.rec.Elapsed() + time.Second - 1) / time.Second
	last := int(min(r.total/time.Second, ran))
	if len(seen) > 0 {
		last = max(last, seen[len(seen)-1]+1)
	}
	sum := func(name string, from, to int) *Stats {
		to = min(to, last)
		var acc accumulator
		lo, _ := slices.BinarySearch(seen, from)
		for _, i := range seen[lo:] {
			if i >= to {
				break
			}
			acc.add(r.rec.Second(i), counters[i], decisions[i], gauges)
		}
		return acc.stats(name, max(to-from, 0))
	}
	phases := map[string]*Stats{}
	for i, ph := range r.profile.Phases {
		from := int((r.starts[i] + ph.Settle.D()) / time.Second)
		to := int((r.starts[i] + ph.Duration.D()) / time.Second)
		phases[ph.Name] = sum(ph.Name, from, to)
	}
	totals := sum("", 0, last)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.final) > 0 && totals.Counters == nil {
		totals.Counters = map[string]float64{}
	}
	for k, v := range r.final {
		totals.Counters[k] = v
	}
	return phases, totals
}
