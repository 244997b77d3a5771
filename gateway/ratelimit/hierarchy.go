package ratelimit

import (
	"fmt"
	"math/bits"
	"strconv"
)

// This file holds hierarchical limits: a rule's Level names its parent, and a request checks
// its whole chain (user → tenant → plan → platform) atomically, in one script call in Redis,
// under one lock in Memory. As in Linux HTB, a level's Limit is its guaranteed share, its
// Ceiling the most it may reach borrowing what its parent leaves unused, and the root's Limit
// is hard. From the leaf up, a level with the request within its share (its own bucket holds
// it, plus its Reserve if the level below borrows) spends from that bucket and its ceiling
// bucket; a level past its share spends from its ceiling bucket only, and asks its parent for
// the request plus the parent's Reserve; any other level denies. Borrowers thus leave the
// Reserve to requests within their share. docs/lessons/algorithms.md, "Hierarchies that
// borrow", has the why and the numbers.

// Level is a rule's place in a hierarchy.
type Level struct {
	// Parent is the ID of the rule above, whose request goes in the same call; "" for the
	// root.
	Parent string
	// Ceiling, 0 for the rule's Limit, is the most it may spend per Window by borrowing its
	// parent's unused budget.
	Ceiling int
	// Reserve, on a parent, is the part of its budget borrowers may not take.
	Reserve int
}

func (r Rule) parent() string {
	if r.Level == nil {
		return ""
	}
	return r.Level.Parent
}

func (r Rule) ceiling() int {
	if r.Level == nil {
		return 0
	}
	return r.Level.Ceiling
}

func (r Rule) reserve() int {
	if r.Level == nil {
		return 0
	}
	return r.Level.Reserve
}

// hierarchyAlgorithm reports whether a level of a hierarchy may use a: the buckets, whose
// answer to "are there k tokens?" only grows with time and shrinks with spending, which the
// two checks at k + lend and at k rely on. A window's count has no ceiling rate to refill.
func hierarchyAlgorithm(a Algorithm) bool { return a == TokenBucket || a == GCRA }

// inHierarchy reports whether a rule is a level of a hierarchy: it has a parent, or a
// reserve for its children.
func (r Rule) inHierarchy() bool { return r.parent() != "" || r.reserve() > 0 }

// validateLevel checks what a level of a hierarchy cannot combine with: windows other than
// the buckets', leases and shards (both split a budget the chain must see whole), shadow
// mode, and a ceiling without a parent or below the rule's own limit.
func (r Rule) validateLevel() error {
	if !r.inHierarchy() && r.ceiling() == 0 {
		return nil
	}
	switch {
	case r.parent() == r.ID:
		return ruleErr(r, "parent", "%q: a rule cannot be its own parent", r.parent())
	case !hierarchyAlgorithm(r.Algorithm):
		return ruleErr(r, "algorithm", "%s: a level of a hierarchy must be token_bucket or gcra", r.Algorithm)
	case r.Lease > 0:
		return ruleErr(r, "lease", "%d: a level of a hierarchy decides in the store; leases would split the chain", r.Lease)
	case r.Shards > 1:
		return ruleErr(r, "shards", "%d: a level of a hierarchy cannot be sharded", r.Shards)
	case r.MaxDelay > 0:
		return ruleErr(r, "max_delay", "%v: a level of a hierarchy refuses what it cannot pass; it does not queue", r.MaxDelay)
	case r.Mode == Shadow || r.Mode == Partial:
		return ruleErr(r, "mode", "%s: a level of a hierarchy is enforced for every key: borrowing needs every level's answer", r.Mode)
	case r.ceiling() > 0 && r.parent() == "":
		return ruleErr(r, "ceiling", "%d: a ceiling borrows from a parent, and the rule has none", r.ceiling())
	case r.ceiling() > 0 && r.ceiling() < r.Limit:
		return ruleErr(r, "ceiling", "%d: below the rule's own limit %d", r.ceiling(), r.Limit)
	case r.reserve() >= r.capacity():
		return ruleErr(r, "reserve", "%d: not below the capacity %d, so no child could ever borrow", r.reserve(), r.capacity())
	}
	if r.ceiling() > 0 {
		if err := r.ceilingRule().Validate(); err != nil {
			return ruleErr(r, "ceiling", "%d per %v: %v", r.ceiling(), r.Window, err)
		}
	}
	return nil
}

// ceilingRule is the bucket that holds a level to its ceiling: Ceiling per Window, with a
// burst scaled from the rule's as the ceiling is from the limit.
func (r Rule) ceilingRule() Rule {
	c := Rule{ID: r.ID + "^ceiling", Algorithm: r.Algorithm, Limit: r.ceiling(), Window: r.Window}
	if r.Burst > 0 {
		hi, lo := bits.Mul64(uint64(r.Burst), uint64(r.ceiling()))
		c.Burst = MaxCount
		if hi < uint64(r.Limit) {
			if q, _ := bits.Div64(hi, lo, uint64(r.Limit)); q < MaxCount {
				c.Burst = max(1, int(q))
			}
		}
	}
	return c
}

// maxRate is the most a level may pass per window: its ceiling, or its limit without one.
func (r Rule) maxRate() int { return max(r.Limit, r.ceiling()) }

// validateChains checks the hierarchies of one call: every named parent is in it, with a
// reserve, named by one child only (a request is a chain, not a tree), without a cycle;
// a child's ceiling is no faster than its parent may go; and every level of a chain fails
// the same way while the store is down, so that a fallback decides a whole chain or none.
func validateChains(reqs []Request) error {
	up := parents(reqs)
	if up == nil {
		return nil
	}
	for i, q := range reqs {
		if q.Rule.parent() == "" {
			continue
		}
		p := up[i]
		switch {
		case p < 0:
			return fmt.Errorf("rule %s: parent %s: not in the request", q.Rule.ID, q.Rule.parent())
		case q.Charge || reqs[p].Charge:
			return fmt.Errorf("rule %s: a level of a hierarchy cannot be charged after the fact", q.Rule.ID)
		}
		parent := reqs[p].Rule
		for j := range i {
			if up[j] == p {
				return fmt.Errorf("rule %s: parent %s: also the parent of %s in the request", q.Rule.ID, parent.ID, reqs[j].Rule.ID)
			}
		}
		if parent.reserve() < 1 {
			return ruleErr(parent, "reserve", "%d: a parent keeps at least 1 unit for its children's shares", parent.reserve())
		}
		if q.Rule.OnStoreFailure != parent.OnStoreFailure {
			return ruleErr(q.Rule, "on_store_failure", "%q: its parent %s has %q; a chain fails one way", q.Rule.OnStoreFailure, parent.ID, parent.OnStoreFailure)
		}
		// Compare ceiling/window with the parent's max/window without dividing.
		h1, l1 := bits.Mul64(uint64(q.Rule.maxRate()), uint64(parent.Window.Microseconds()))
		h2, l2 := bits.Mul64(uint64(parent.maxRate()), uint64(q.Rule.Window.Microseconds()))
		if h1 > h2 || h1 == h2 && l1 > l2 {
			field := "ceiling"
			if q.Rule.ceiling() == 0 {
				field = "limit"
			}
			return ruleErr(q.Rule, field, "%d per %v: above its parent %s's %d per %v", q.Rule.maxRate(), q.Rule.Window, parent.ID, parent.maxRate(), parent.Window)
		}
		for j, steps := p, 0; j >= 0; j, steps = up[j], steps+1 {
			if j == i || steps > len(reqs) {
				return ruleErr(q.Rule, "parent", "%q: the chain comes back to %s", q.Rule.parent(), q.Rule.ID)
			}
		}
	}
	return nil
}

// parents returns, for each request, the index of its parent's request, or -1; nil when no
// request names a parent, the flat case, which pays nothing more.
func parents(reqs []Request) []int {
	var up []int
	for i, q := range reqs {
		if q.Rule.parent() == "" {
			continue
		}
		if up == nil {
			up = make([]int, len(reqs))
			for j := range up {
				up[j] = -1
			}
		}
		for j, p := range reqs {
			if p.Rule.ID == q.Rule.parent() && j != i {
				up[i] = j
				break
			}
		}
	}
	return up
}

// chainKeys returns the storage keys of reqs whose chains up are given: a flat rule's is
// storageKey's; a level's carries its root's hash tag, so that a whole chain lands on one
// Redis Cluster slot and one script call, and ceiling keys, by request, "" for none.
func chainKeys(reqs []Request, up []int) (keys, ceilings []string) {
	keys, ceilings = make([]string, len(reqs)), make([]string, len(reqs))
	for i, q := range reqs {
		if up[i] < 0 && !isParent(up, i) {
			keys[i] = storageKey(q.Rule.ID, q.Key)
			continue
		}
		root := i
		for steps := 0; up[root] >= 0 && steps < len(reqs); steps++ {
			root = up[root]
		}
		tag, ok := hashTag(reqs[root].Key)
		if !ok {
			tag = reqs[root].Key
		}
		prefix := "rl:{" + tag + "}:" + strconv.Itoa(len(q.Key)) + ":" + q.Key + ":"
		keys[i] = prefix + q.Rule.ID
		if q.Rule.ceiling() > 0 {
			ceilings[i] = prefix + "^ceiling:" + q.Rule.ID
		}
	}
	return keys, ceilings
}

// isParent reports whether request i is the parent of another in the call.
func isParent(up []int, i int) bool {
	for _, p := range up {
		if p == i {
			return true
		}
	}
	return false
}

// decideChains is Memory.decide for a call holding hierarchies; up is parents(reqs). Flat
// rules decide as in decide; each chain is walked from its leaf as the file's comment says.
// scripts/chain.lua is its twin. The caller holds m.mu.
func (m *Memory) decideChains(reqs []Request, up []int, spend bool, path Path, now int64) Result {
	keys, ceilings := chainKeys(reqs, up)
	ds := make([]Decision, len(reqs))
	// spends[i] spends request i if the call is admitted; shown[i] reports its budget as it
	// stands, for an allowed rule of a denied call.
	spends := make([]func(), len(reqs))
	shown := make([]func() Decision, len(reqs))
	bucket := func(key string, r Rule) (*entry, params) {
		return m.lookupKey(key, r.Algorithm, now), r.params()
	}
	standing := func(key string, q Request, ceiling bool) func() Decision {
		return func() Decision {
			r := q.Rule
			if ceiling {
				r = r.ceilingRule()
			}
			e, p := bucket(key, r)
			v, _ := e.st.try(p, now, 0, "")
			return level(v, q, path, ceiling)
		}
	}
	for i, q := range reqs {
		if up[i] >= 0 || isParent(up, i) {
			continue
		}
		e, p := bucket(keys[i], q.Rule)
		lease := ""
		if q.Rule.Algorithm == Concurrency {
			m.leases++
			lease = "m" + strconv.FormatUint(m.leases, 10)
		}
		v, commit := e.st.try(p, now, q.cost(), lease)
		ds[i] = v.decision(q, path)
		if v.allowed && lease != "" {
			ds[i].Lease = &Lease{Rule: q.Rule.ID, Key: q.Key, ID: lease, local: true}
		}
		key := keys[i]
		spends[i] = func() { m.keep(key, e, now+commit()) }
		shown[i] = standing(key, q, false)
	}
	for leaf := range reqs {
		if up[leaf] < 0 || isParent(up, leaf) {
			continue
		}
		borrow := false
		for j, steps := leaf, 0; j >= 0 && steps < len(reqs); j, steps = up[j], steps+1 {
			q := reqs[j]
			k, need := q.cost(), q.cost()
			if borrow {
				need += int64(q.Rule.reserve())
			}
			e, p := bucket(keys[j], q.Rule)
			vs, _ := e.st.try(p, now, need, "")
			var (
				c      *entry
				vc     verdict
				commit func() int64
			)
			if ceilings[j] != "" {
				var cp params
				c, cp = bucket(ceilings[j], q.Rule.ceilingRule())
				vc, commit = c.st.try(cp, now, k, "")
			}
			borrow = false
			ckey, key := ceilings[j], keys[j]
			switch {
			case vs.allowed && (c == nil || vc.allowed):
				v, own := e.st.try(p, now, k, "")
				ds[j] = level(v, q, path, false)
				spends[j] = func() {
					m.keep(key, e, now+own())
					if c != nil {
						m.keep(ckey, c, now+commit())
					}
				}
				shown[j] = standing(key, q, false)
			case c != nil && vc.allowed && up[j] >= 0:
				ds[j] = level(vc, q, path, true)
				spends[j] = func() { m.keep(ckey, c, now+commit()) }
				shown[j] = standing(ckey, q, true)
				borrow = true
			case c != nil && !vc.allowed:
				ds[j] = level(vc, q, path, true)
			default:
				ds[j] = level(vs, q, path, false)
			}
		}
	}
	admit := spend && admitted(ds)
	for i, q := range reqs {
		switch {
		case q.Charge && spend: // flat rules only: validateChains refuses charged levels
			spends[i]()
			ds[i] = shown[i]()
		case admit && ds[i].Allowed:
			spends[i]()
		case ds[i].Allowed:
			ds[i] = shown[i]()
		}
	}
	return combine(ds)
}

// level is a level's decision from the verdict of its own bucket or, when ceiling, of its
// ceiling bucket.
func level(v verdict, q Request, path Path, ceiling bool) Decision {
	d := v.decision(q, path)
	if ceiling {
		d.Limit, d.Borrowing = q.Rule.ceiling(), true
	}
	return d
}

// encodeChains writes the command of a call holding hierarchies, for scripts/chain.lua: the
// call's keys, then its levels' ceiling keys; 7 arguments per key as decide.lua's, the 7th
// saying a key's part: a flat rule's lease id; "L<up> <ceiling> <reserve>" for a level (up
// and ceiling are the key positions of its parent and ceiling bucket, 0 for none); "C" for
// a ceiling bucket.
func (c *scriptCall) encodeChains(reqs []Request, up []int, keys, ceilings, leases []string, now any) error {
	n := c.size(len(reqs))
	var set algorithmSet
	pos := make([]int, len(reqs)) // request index → key position in the call, from 1
	extra := 0
	for k := range n {
		i := c.index(k)
		set = set.with(reqs[i].Rule.Algorithm)
		pos[i] = k + 1
		if ceilings[i] != "" {
			extra++
		}
	}
	script, err := chainScript(set)
	if err != nil {
		return err
	}
	c.script = script
	total := n + extra
	c.args = make([]any, 3, 3+total+7*total+1)
	c.args[0], c.args[1], c.args[2] = "evalsha", script.sha, total
	for k := range n {
		c.args = append(c.args, keys[c.index(k)])
	}
	for k := range n {
		if key := ceilings[c.index(k)]; key != "" {
			c.args = append(c.args, key)
		}
	}
	next := n
	var ceilingArgs []any
	for k := range n {
		i := c.index(k)
		q := reqs[i]
		mode := modeArg(q)
		var part any = ""
		switch {
		case up[i] >= 0 || isParent(up, i):
			parent, ceiling := 0, 0
			if up[i] >= 0 {
				parent = pos[up[i]]
			}
			if ceilings[i] != "" {
				next++
				ceiling = next
				cp := q.Rule.ceilingRule().params()
				ceilingArgs = append(ceilingArgs, algorithmArgs[q.Rule.Algorithm], cp.limit, cp.window, cp.burst, q.cost(), mode, "C")
			}
			part = fmt.Sprintf("L%d %d %d", parent, ceiling, q.Rule.reserve())
		default: // a flat rule
			part = extraArg(q.Rule.params(), leases, i)
		}
		p := q.Rule.params()
		c.args = append(c.args, algorithmArgs[q.Rule.Algorithm], p.limit, p.window, p.burst, q.cost(), mode, part)
	}
	c.args = append(c.args, ceilingArgs...)
	if now != nil {
		c.args = append(c.args, now)
	}
	return nil
}

// ValidateChain checks rules as one chain, leaf first, each the parent of the one before:
// what Allow would refuse in a call holding it. Errors are *RuleError where a field is at
// fault.
func ValidateChain(rules []Rule) error {
	reqs := make([]Request, len(rules))
	for i, r := range rules {
		reqs[i] = Request{Rule: r, Key: "k"}
	}
	return validate(reqs)
}
