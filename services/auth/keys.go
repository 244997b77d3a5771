package auth

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"
)

// SigningKey is one Ed25519 key that signs access tokens during its turn: published in the
// JWKS from CreatedAt, signing from ActivatesAt until the next generation activates, then
// published as long as a token it signed can live. Its state is derived from those instants
// and the clock, never stored, so every instance agrees on which key signs. The private key
// is stored unencrypted: whoever can read the auth database can mint tokens.
type SigningKey struct {
	ID          string // the kid
	Generation  int64  // 1, 2, 3…; unique, so two instances cannot both add the next key
	Private     ed25519.PrivateKey
	CreatedAt   time.Time
	ActivatesAt time.Time
}

// Public is the key's public half, as published.
func (k SigningKey) Public() ed25519.PublicKey { return k.Private.Public().(ed25519.PublicKey) }

// KeyState is where a key is in its life.
type KeyState string

// The states, in order. A key moves next → active → retired → expired and never back.
const (
	KeyNext    KeyState = "next"    // published, not signing yet: verifiers' caches learn it first
	KeyActive  KeyState = "active"  // signs every new token
	KeyRetired KeyState = "retired" // no longer signs; published until its last token expires
	KeyExpired KeyState = "expired" // no token it signed is valid; removed
)

// KeyPolicy is when keys rotate.
type KeyPolicy struct {
	// RotateEvery is how long a key signs before its successor takes over (AUTH_KEY_ROTATION).
	RotateEvery time.Duration
	// PublishLead is how long a new key is published before it signs. It must outlast the
	// JWKS caches of verifiers (the gateway's), so none meets a kid it has not seen.
	PublishLead time.Duration
	// TokenTTL is the longest an access token lives; a retired key stays published this long.
	TokenTTL time.Duration
}

// Validate reports a policy under which rotation could not keep its promises.
func (p KeyPolicy) Validate() error {
	switch {
	case p.RotateEvery <= 0 || p.TokenTTL <= 0 || p.PublishLead <= 0:
		return errors.New("key policy: durations must be positive")
	case p.PublishLead >= p.RotateEvery:
		return fmt.Errorf("key policy: publish lead %v must be shorter than the rotation period %v", p.PublishLead, p.RotateEvery)
	}
	return nil
}

// Keyring is a snapshot of the signing keys, ordered by generation, and the policy that
// dates their states. A Keyring is immutable and safe for concurrent use.
type Keyring struct {
	keys   []SigningKey
	policy KeyPolicy
}

// NewKeyring returns a Keyring over keys (copied and ordered by generation).
func NewKeyring(keys []SigningKey, p KeyPolicy) *Keyring {
	ks := slices.Clone(keys)
	slices.SortFunc(ks, func(a, b SigningKey) int { return cmp.Compare(a.Generation, b.Generation) })
	return &Keyring{keys: ks, policy: p}
}

// Keys returns every key of the snapshot, in generation order.
func (r *Keyring) Keys() []SigningKey { return slices.Clone(r.keys) }

func (r *Keyring) state(i int, now time.Time) KeyState {
	k := r.keys[i]
	if now.Before(k.ActivatesAt) {
		return KeyNext
	}
	if i+1 == len(r.keys) || now.Before(r.keys[i+1].ActivatesAt) {
		return KeyActive
	}
	if now.Before(r.keys[i+1].ActivatesAt.Add(r.policy.TokenTTL)) {
		return KeyRetired
	}
	return KeyExpired
}

// State returns the state of the key with id kid at now, and false if the snapshot lacks it.
func (r *Keyring) State(kid string, now time.Time) (KeyState, bool) {
	for i, k := range r.keys {
		if k.ID == kid {
			return r.state(i, now), true
		}
	}
	return "", false
}

// Signer returns the key that signs at now: the newest one whose turn has begun.
// False means there is none yet.
func (r *Keyring) Signer(now time.Time) (SigningKey, bool) {
	for i := len(r.keys) - 1; i >= 0; i-- {
		if r.state(i, now) == KeyActive {
			return r.keys[i], true
		}
	}
	return SigningKey{}, false
}

// Published returns the keys a verifier must know at now: next, active and retired ones.
func (r *Keyring) Published(now time.Time) []SigningKey {
	var out []SigningKey
	for i, k := range r.keys {
		if r.state(i, now) != KeyExpired {
			out = append(out, k)
		}
	}
	return out
}

// Expired returns the keys that may be deleted at now.
func (r *Keyring) Expired(now time.Time) []SigningKey {
	var out []SigningKey
	for i, k := range r.keys {
		if r.state(i, now) == KeyExpired {
			out = append(out, k)
		}
	}
	return out
}

// NextKey says whether a new key is due at now and when it should start signing: the first
// key at once; none while a key already waits to sign; otherwise a successor one publish lead
// before the active key's period ends (at once when force), signing when that period ends but
// never sooner than one lead from now, so caches learn a key before it signs, even after a
// missed rotation. See docs/lessons/gateway.md, "What it does, step by step".
func (r *Keyring) NextKey(now time.Time, force bool) (activatesAt time.Time, due bool) {
	if len(r.keys) == 0 {
		return now, true
	}
	last := r.keys[len(r.keys)-1]
	if now.Before(last.ActivatesAt) {
		return time.Time{}, false
	}
	earliest := now.Add(r.policy.PublishLead)
	if force {
		return earliest, true
	}
	end := last.ActivatesAt.Add(r.policy.RotateEvery)
	if now.Before(end.Add(-r.policy.PublishLead)) {
		return time.Time{}, false
	}
	return later(end, earliest), true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
