package ratelimit

// Enforces reports whether a rule enforced for percent % of its keys (Partial mode) enforces
// it for key. The choice is a hash of the rule's id and the key, so a key keeps its answer
// across requests, replicas and restarts, each rule picks its own keys, and raising the
// percentage only adds keys: the key's bucket (0 to 99) stays put and the bar moves past it.
// 0 enforces no key, 100 every key. It allocates nothing. See docs/lessons/rate-limiting.md,
// "Gradual enforcement".
func Enforces(rule, key string, percent int) bool {
	return rolloutBucket(rule, key) < uint64(percent)
}

// rolloutBucket is the key's place, 0 to 99, in a rule's rollout: FNV-1a over rule, a zero
// byte and key (fixed constants, unlike hash/maphash's per-process seed), then the 64-bit
// finalizer of MurmurHash3, so that keys alike but for their last digit spread evenly.
func rolloutBucket(rule, key string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(rule); i++ {
		h = (h ^ uint64(rule[i])) * prime
	}
	h *= prime // the zero byte: "ab"+"c" and "a"+"bc" differ
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h % 100
}

// mode is how q's rule applies to q's key: Enforce, or Shadow for a shadow rule and for a
// key outside a Partial rule's enforced share, which unenforced then reports.
func (q Request) mode() (m Mode, unenforced bool) {
	switch q.Rule.Mode {
	case Shadow:
		return Shadow, false
	case Partial:
		if Enforces(q.Rule.ID, q.Key, q.Rule.EnforcePercent) {
			return Enforce, false
		}
		return Shadow, true
	}
	return Enforce, false
}

// enforced reports whether a denial of q's rule for q's key denies the request.
func (q Request) enforced() bool {
	m, _ := q.mode()
	return m == Enforce
}
