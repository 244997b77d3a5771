package authn

import (
	"crypto/sha256"
	"sync"
	"time"
)

// secretCache maps credentials (API keys, bearer tokens) to what checking them found, each
// answer kept until its own expiry; APIKeys and Verifier share it. Entries are keyed by the
// credential's SHA-256, never held in the clear. When full it drops expired entries, then
// arbitrary ones (Go's map order is random: no access pattern keeps an attacker's in), down
// to seven eighths of the bound, so a full cache does not sweep at every insertion. Safe for
// concurrent use.
type secretCache[V any] struct {
	max int
	mu  sync.RWMutex
	m   map[[sha256.Size]byte]secretEntry[V]
}

type secretEntry[V any] struct {
	v       V
	expires time.Time
}

// newSecretCache returns an empty cache of at most size entries (at least 1).
func newSecretCache[V any](size int) *secretCache[V] {
	return &secretCache[V]{max: max(1, size), m: make(map[[sha256.Size]byte]secretEntry[V])}
}

// get returns the value stored under h if it has not expired at now.
func (c *secretCache[V]) get(h [sha256.Size]byte, now time.Time) (V, bool) {
	c.mu.RLock()
	e, ok := c.m[h]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put stores v under h until expires, making room first when the cache is full.
func (c *secretCache[V]) put(h [sha256.Size]byte, v V, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[h]; !ok && len(c.m) >= c.max {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max-c.max/8 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[h] = secretEntry[V]{v: v, expires: expires}
}

// remove forgets h.
func (c *secretCache[V]) remove(h [sha256.Size]byte) {
	c.mu.Lock()
	delete(c.m, h)
	c.mu.Unlock()
}

// len is the number of entries, expired ones included until they are swept.
func (c *secretCache[V]) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
