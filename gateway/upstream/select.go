package upstream

// pick returns the instance to try: of two routable instances other than skip, chosen at
// random, the one with fewer requests in flight (power of two choices). It returns nil when
// no instance is routable.
//
// Why two choices: the least-loaded of all instances needs every counter at once and sends
// every gateway replica to the same instance at the same moment (herding); one at random
// ignores load. Two random candidates keep almost all the benefit of least-loaded without
// either problem (Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing").
func (pl *pool) pick(now int64, skip *instance, intn func(int) int) *instance {
	var buf [16]*instance // no allocation for the usual handful of instances
	cands := buf[:0]
	for _, in := range *pl.instances.Load() {
		if in != skip && in.routable(now) {
			cands = append(cands, in)
		}
	}
	switch len(cands) {
	case 0:
		return nil
	case 1:
		return cands[0]
	}
	i := intn(len(cands))
	j := intn(len(cands) - 1)
	if j >= i {
		j++ // two distinct candidates
	}
	a, b := cands[i], cands[j]
	if b.inFlight.Load() < a.inFlight.Load() {
		return b
	}
	return a
}
