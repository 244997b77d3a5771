package token

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// JWKS is a JSON Web Key Set (RFC 7517) as served at /.well-known/jwks.json.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWK is one public key of a JWKS. BoxOffice publishes Ed25519 keys only (RFC 8037):
// kty "OKP", crv "Ed25519", x the 32-byte public key in base64url.
type JWK struct {
	KeyType   string `json:"kty"`
	Curve     string `json:"crv,omitempty"`
	X         string `json:"x,omitempty"`
	KeyID     string `json:"kid"`
	Algorithm string `json:"alg,omitempty"`
	Use       string `json:"use,omitempty"`
}

// PublicJWK describes pub as the JWK a verifier looks up by kid.
func PublicJWK(kid string, pub ed25519.PublicKey) JWK {
	return JWK{
		KeyType:   "OKP",
		Curve:     "Ed25519",
		X:         base64.RawURLEncoding.EncodeToString(pub),
		KeyID:     kid,
		Algorithm: Algorithm,
		Use:       "sig",
	}
}

// KeySet maps a kid to its Ed25519 public key. A nil KeySet knows no key. It is read-only
// once built, so it is safe for concurrent use; a verifier that refreshes keys builds a new one.
type KeySet map[string]ed25519.PublicKey

var _ Keys = KeySet(nil)

// PublicKey returns the key named kid.
func (s KeySet) PublicKey(kid string) (ed25519.PublicKey, bool) {
	k, ok := s[kid]
	return k, ok
}

// ParseJWKS decodes a JWKS document into a KeySet.
func ParseJWKS(data []byte) (KeySet, error) {
	var set JWKS
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("parse jwks: %w", err)
	}
	return set.KeySet()
}

// KeySet returns the Ed25519 signing keys of s. Keys of other types or uses are skipped,
// as RFC 7517 asks of keys a reader does not understand, so publishing a key of a new kind
// does not break verifiers that predate it; a malformed Ed25519 key or a repeated kid is
// an error, because it means the publisher is broken.
func (s JWKS) KeySet() (KeySet, error) {
	set := make(KeySet, len(s.Keys))
	for _, k := range s.Keys {
		if k.KeyType != "OKP" || k.Curve != "Ed25519" || (k.Use != "" && k.Use != "sig") ||
			(k.Algorithm != "" && k.Algorithm != Algorithm) {
			continue
		}
		if k.KeyID == "" {
			return nil, fmt.Errorf("jwks: an Ed25519 key has no kid")
		}
		pub, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("jwks: key %q: x is not a base64url Ed25519 public key", k.KeyID)
		}
		if _, dup := set[k.KeyID]; dup {
			return nil, fmt.Errorf("jwks: kid %q appears twice", k.KeyID)
		}
		set[k.KeyID] = ed25519.PublicKey(pub)
	}
	return set, nil
}
