// Package pass is the waitroom's admission pass: a short-lived, Ed25519-signed statement that
// one account may hold seats of one flash-sale event until a given time.
//
// The waitroom signs passes with its private key; inventory verifies them with the public key
// alone, on its own hot path, without calling the waitroom. The token is compact and URL-safe
// so it fits a header:
//
//	base64url(JSON of Pass) "." base64url(Ed25519 signature of the JSON bytes)
//
// There is no key id and no algorithm field: a verifier accepts exactly one algorithm and one
// key, so a token cannot talk it into another ("alg: none" and key-confusion attacks need a
// choice to exploit). Rotating the key means restarting inventory with the new public key;
// passes live minutes, so the cost is a few minutes of refused passes at most.
package pass

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Pass admits User to hold seats of EventID until ExpiresAt.
type Pass struct {
	EventID   string    `json:"event_id"`
	User      string    `json:"user"`
	ExpiresAt time.Time `json:"expires_at"`
}

// The reasons Verify refuses a token. Callers answer all of them the same way (403); the
// distinction is for logs and tests.
var (
	ErrMalformed = errors.New("pass: malformed token")
	ErrSignature = errors.New("pass: bad signature")
	ErrExpired   = errors.New("pass: expired")
)

// ErrWrongHolder is returned by Check when a valid pass names another event or account.
var ErrWrongHolder = errors.New("pass: issued for another event or account")

// encoding is URL-safe without padding, so a token needs no escaping in a header or a URL.
var encoding = base64.RawURLEncoding

// Sign returns p as a signed token. ExpiresAt is truncated to the second: a pass's lifetime
// is minutes, and whole seconds keep the token short and its JSON canonical.
func Sign(priv ed25519.PrivateKey, p Pass) string {
	p.ExpiresAt = p.ExpiresAt.UTC().Truncate(time.Second)
	body, _ := json.Marshal(p) // a struct of strings and a time: cannot fail
	sig := ed25519.Sign(priv, body)
	return encoding.EncodeToString(body) + "." + encoding.EncodeToString(sig)
}

// Verify checks token's signature with pub and that it has not expired at now, and returns
// the pass. It does not check whom the pass is for; see Check.
func Verify(pub ed25519.PublicKey, token string, now time.Time) (Pass, error) {
	if len(pub) != ed25519.PublicKeySize {
		return Pass{}, fmt.Errorf("%w: public key is %d bytes, want %d", ErrSignature, len(pub), ed25519.PublicKeySize)
	}
	b64body, b64sig, ok := strings.Cut(token, ".")
	if !ok {
		return Pass{}, ErrMalformed
	}
	body, err := encoding.DecodeString(b64body)
	if err != nil {
		return Pass{}, fmt.Errorf("%w: body: %w", ErrMalformed, err)
	}
	sig, err := encoding.DecodeString(b64sig)
	if err != nil {
		return Pass{}, fmt.Errorf("%w: signature: %w", ErrMalformed, err)
	}
	// The signature is checked before the body is parsed: nothing an attacker wrote is
	// interpreted until it is known to come from the waitroom.
	if !ed25519.Verify(pub, body, sig) {
		return Pass{}, ErrSignature
	}
	var p Pass
	if err := json.Unmarshal(body, &p); err != nil {
		return Pass{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !now.Before(p.ExpiresAt) {
		return Pass{}, fmt.Errorf("%w at %s", ErrExpired, p.ExpiresAt.Format(time.RFC3339))
	}
	return p, nil
}

// Check verifies token as Verify does and also that it admits user to eventID.
func Check(pub ed25519.PublicKey, token string, now time.Time, eventID, user string) (Pass, error) {
	p, err := Verify(pub, token, now)
	if err != nil {
		return Pass{}, err
	}
	if p.EventID != eventID || p.User != user {
		return Pass{}, ErrWrongHolder
	}
	return p, nil
}

// keyEncoding is how keys travel in environment variables: base64 without padding (padded
// input is accepted too). WAITROOM_SIGNING_KEY holds a 32-byte seed, any 32 random bytes
// (`head -c 32 /dev/urandom | base64`); WAITROOM_PUBLIC_KEY holds its public key, which
// EncodePublicKey writes and a waitroom started without a seed logs.
var keyEncoding = base64.RawStdEncoding

// ParsePrivateKey decodes a base64 32-byte seed into a private key.
func ParsePrivateKey(s string) (ed25519.PrivateKey, error) {
	seed, err := keyEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(s), "="))
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("signing key: %d bytes, want a %d-byte seed", len(seed), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// ParsePublicKey decodes a base64 32-byte Ed25519 public key.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := keyEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(s), "="))
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key: %d bytes, want %d", len(b), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// EncodePrivateKey is the inverse of ParsePrivateKey: the key's seed in base64.
func EncodePrivateKey(priv ed25519.PrivateKey) string { return keyEncoding.EncodeToString(priv.Seed()) }

// EncodePublicKey is the inverse of ParsePublicKey.
func EncodePublicKey(pub ed25519.PublicKey) string { return keyEncoding.EncodeToString(pub) }
