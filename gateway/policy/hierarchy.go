package policy

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"boxoffice.dev/gateway/ratelimit"
)

// This file validates and compiles hierarchies of limits (Limit.Parent, Ceiling, Reserve):
// the rate limiter decides them (ratelimit/hierarchy.go); the policy checks that every
// chain it can be asked is one the limiter accepts, so that a route never fails at run time.

// validateLevel checks a limit's own hierarchy fields: the ceiling's rate, expressed per the
// limit's window as a whole number, and the reserve.
func validateLevel(field func(string) string, l Limit, window time.Duration) error {
	if l.Reserve < 0 {
		return fieldErr(field("reserve"), "%d: want 0 (a tenth of the capacity) or more", l.Reserve)
	}
	if l.Ceiling == "" {
		return nil
	}
	if l.Parent == "" {
		return fieldErr(field("ceiling"), "%q: a ceiling borrows from a parent: set parent", l.Ceiling)
	}
	n, w, err := ParseRate(l.Ceiling)
	if err != nil {
		return fieldErr(field("ceiling"), "%v", err)
	}
	hi, lo := bits.Mul64(uint64(n), uint64(window.Microseconds()))
	if hi >= uint64(w.Microseconds()) {
		return fieldErr(field("ceiling"), "%q: too large", l.Ceiling)
	}
	if _, rem := bits.Div64(hi, lo, uint64(w.Microseconds())); rem != 0 {
		return fieldErr(field("ceiling"), "%q is not a whole number per the rate's window %v: write it per %v", l.Ceiling, window, window)
	}
	return nil
}

// level is the rate limiter's Level of a validated limit; nil for a flat one (withReserves
// gives one to a parent).
func level(l Limit, window time.Duration) *ratelimit.Level {
	if l.Parent == "" && l.Ceiling == "" && l.Reserve == 0 {
		return nil
	}
	return &ratelimit.Level{Parent: l.Parent, Ceiling: ceilingPer(l.Ceiling, window), Reserve: l.Reserve}
}

// ceilingPer is a validated ceiling rate as a count per window; 0 for "".
func ceilingPer(ceiling string, window time.Duration) int {
	if ceiling == "" {
		return 0
	}
	n, w, _ := ParseRate(ceiling)
	hi, lo := bits.Mul64(uint64(n), uint64(window.Microseconds()))
	q, _ := bits.Div64(hi%uint64(w.Microseconds()), lo, uint64(w.Microseconds()))
	return int(q)
}

// withReserves gives every limit that is a parent and sets no reserve the default: a tenth
// of its capacity (burst, else limit), at least 1.
func withReserves(limits map[string]*CompiledLimit) {
	for _, l := range limits {
		p, ok := limits[l.Parent]
		if !ok || p.Rule.Level != nil && p.Rule.Level.Reserve > 0 {
			continue
		}
		capacity := p.Rule.Limit
		if p.Rule.Burst > 0 {
			capacity = p.Rule.Burst
		}
		lv := ratelimit.Level{}
		if p.Rule.Level != nil {
			lv = *p.Rule.Level
		}
		lv.Reserve = max(1, capacity/10)
		p.Rule.Level = &lv
	}
}

// chain is the limit id and its ancestors, leaf first; at most len(limits) long, which a
// cycle (refused by validation) would reach.
func chain(limits map[string]*CompiledLimit, id string) []*CompiledLimit {
	var out []*CompiledLimit
	for l, ok := limits[id]; ok && len(out) < len(limits); l, ok = limits[l.Parent] {
		out = append(out, l)
	}
	return out
}

// validateHierarchies checks the chains of the policy's limits, each already valid on its
// own: parents that exist, no cycle, and what the rate limiter asks of a chain (ceilings
// within the parent's, one on_store_failure, supported algorithms). Errors name the field of
// the limit at fault: limits[tenant].ceiling.
func validateHierarchies(list []Limit) error {
	limits := make(map[string]*CompiledLimit, len(list))
	for _, l := range list {
		limits[l.ID] = compileLimit(l)
	}
	withReserves(limits)
	for i, l := range list {
		if l.Parent == "" {
			continue
		}
		if _, ok := limits[l.Parent]; !ok {
			return fieldErr(ref("limits", i, l.ID)+".parent", "limit %q is not defined under limits", l.Parent)
		}
		levels := chain(limits, l.ID)
		for _, lv := range levels {
			if lv.CostHeader != "" {
				return fieldErr(fmt.Sprintf("limits[%s].cost_header", lv.ID), "a level of a hierarchy spends its whole chain before the response; a cost read after it cannot be")
			}
		}
		if last := levels[len(levels)-1]; last.Parent != "" {
			return fieldErr(ref("limits", i, l.ID)+".parent", "%q: the chain of parents comes back to a limit it passed", l.Parent)
		}
		rules := make([]ratelimit.Rule, len(levels))
		for j, lv := range levels {
			rules[j] = lv.Rule
		}
		if err := ratelimit.ValidateChain(rules); err != nil {
			if re, ok := errors.AsType[*ratelimit.RuleError](err); ok {
				queued := limits[re.Rule] != nil && limits[re.Rule].Queue != nil
				return fieldErr(fmt.Sprintf("limits[%s].%s", re.Rule, limitField(err, queued)), "%s", re.Problem)
			}
			return fieldErr(ref("limits", i, l.ID)+".parent", "%v", err)
		}
	}
	return nil
}

// validateRouteChains refuses a route whose limits, with their parents, hold two levels of
// one parent: a request follows one chain, and the limiter asks a parent for one child per
// call.
func validateRouteChains(routes []Route, list []Limit) error {
	limits := make(map[string]*CompiledLimit, len(list))
	for _, l := range list {
		limits[l.ID] = compileLimit(l)
	}
	for i, r := range routes {
		child := map[string]string{} // parent id → its child on the route
		for j, id := range r.Limits {
			for _, lv := range chain(limits, id) {
				if c, ok := child[lv.Parent]; ok && c != lv.ID {
					return fieldErr(fmt.Sprintf("%s.limits[%d]", ref("routes", i, r.ID), j),
						"%q and %q both spend %q: a request follows one chain; list one of them", lv.ID, c, lv.Parent)
				}
				if lv.Parent != "" {
					child[lv.Parent] = lv.ID
				}
			}
		}
	}
	return nil
}
