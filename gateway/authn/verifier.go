package authn

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"boxoffice.dev/services/auth/token"
)

// Verifier checks access tokens against the JWKS, learning rotated keys on the way, and
// caches verified tokens until the earliest of exp (plus leeway) and CacheTTL: an Ed25519
// check costs tens of microseconds, the largest part of the gateway's own work, and a client
// sends one token until it expires. A cached token passes only while its key is still
// published with the same bytes. Failed tokens are never cached, and at most CacheSize are
// (secretCache). Safe for concurrent use.
type Verifier struct {
	keys   *JWKS
	v      token.Verifier
	leeway time.Duration
	now    func() time.Time
	ttl    time.Duration
	cache  *secretCache[verifiedToken]
	// check verifies a token the cache does not hold, returning the kid and key that signed
	// it; tests wrap it to count signature checks.
	check func(raw string) (token.Claims, string, ed25519.PublicKey, error)
}

// Defaults of the Verifier's cache of verified tokens.
const (
	// CacheTTL is the longest a verified token is accepted without being verified again.
	CacheTTL = time.Minute
	// CacheSize is the most tokens the cache holds: 10,000 tokens of ~300 bytes each are
	// a few MiB.
	CacheSize = 10_000
)

// verifiedToken is what the cache keeps of a verified token.
type verifiedToken struct {
	claims token.Claims
	kid    string
	key    ed25519.PublicKey
}

// NewVerifier returns a verifier of tokens issued by issuer for audience; leeway tolerates
// clock skew on exp and nbf. The algorithm is token.Algorithm (EdDSA), pinned before any key
// is looked up.
func NewVerifier(keys *JWKS, issuer, audience string, leeway time.Duration) *Verifier {
	v := &Verifier{
		keys:   keys,
		v:      token.Verifier{Keys: keys, Issuer: issuer, Audience: audience, Leeway: leeway, Now: keys.now},
		leeway: leeway,
		now:    keys.now,
		ttl:    CacheTTL,
		cache:  newSecretCache[verifiedToken](CacheSize),
	}
	v.check = v.verifySignature
	return v
}

// Verify returns the claims of a valid token, or an error wrapping one of token's Err*. An
// unknown kid that could not be looked up, because the key set cannot be fetched, wraps
// ErrKeysUnavailable as well as token.ErrUnknownKey: the token may be valid.
func (v *Verifier) Verify(ctx context.Context, raw string) (token.Claims, error) {
	var buf [1024]byte // the token's bytes, on the stack when it has a usual size: every request hashes one
	h := sha256.Sum256(append(buf[:0], raw...))
	now := v.now()
	if t, ok := v.cache.get(h, now); ok {
		if pub, ok := v.keys.PublicKey(t.kid); ok && bytes.Equal(pub, t.key) {
			return t.claims, nil
		}
		v.cache.remove(h) // its key left the JWKS: verify again, which refuses it
	}
	gen := v.keys.generation()
	c, kid, key, err := v.check(raw)
	if errors.Is(err, token.ErrUnknownKey) {
		changed, kerr := v.keys.refetchUnknown(ctx, gen)
		switch {
		case changed:
			c, kid, key, err = v.check(raw)
		case kerr != nil:
			err = fmt.Errorf("%w: %w", err, kerr)
		}
	}
	if err != nil {
		return c, err
	}
	until := now.Add(v.ttl)
	if exp := c.ExpiresAt.Add(v.leeway); exp.Before(until) {
		until = exp
	}
	if now.Before(until) {
		v.cache.put(h, verifiedToken{claims: c, kid: kid, key: key}, until, now)
	}
	return c, nil
}

// verifySignature runs the full check of raw and reports which key signed it.
func (v *Verifier) verifySignature(raw string) (token.Claims, string, ed25519.PublicKey, error) {
	rec := &keyRecorder{keys: v.keys}
	tv := v.v
	tv.Keys = rec
	c, err := tv.Verify(raw)
	return c, rec.kid, rec.key, err
}

// keyRecorder hands out the JWKS's keys and remembers the one it gave, so that the verifier
// learns which key signed a token without parsing its header a second time.
type keyRecorder struct {
	keys token.Keys
	kid  string
	key  ed25519.PublicKey
}

var _ token.Keys = (*keyRecorder)(nil)

func (r *keyRecorder) PublicKey(kid string) (ed25519.PublicKey, bool) {
	k, ok := r.keys.PublicKey(kid)
	if ok {
		r.kid, r.key = kid, k
	}
	return k, ok
}
