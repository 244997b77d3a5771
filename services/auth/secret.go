package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Bearer secrets: API keys and refresh tokens are 32 random bytes in base64url behind a
// prefix that says what they are (so a leaked one is recognisable by secret scanners, and a
// refresh token pasted as an API key is refused by its shape).
const (
	APIKeyPrefix       = "bo_live_"
	refreshTokenPrefix = "bo_rt_"
	secretBytes        = 32
)

// newSecret returns prefix + base64url of 32 bytes read from random.
func newSecret(random io.Reader, prefix string) (string, error) {
	var b [secretBytes]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return "", fmt.Errorf("read random: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashSecret is what the store keeps of an API key or a refresh token: SHA-256 in hex. Fast
// and unsalted, unlike a password's hash: a 256-bit random secret cannot be guessed at any
// speed, so slowness would protect nothing, and a fast hash resolves a key with one indexed
// lookup per request.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// sameHash compares two hashes in constant time. The lookup found the row by its hash
// already, so this guards against a store that matched loosely (a collation, a prefix
// index) rather than against timing; it costs nothing to be sure.
func sameHash(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// wellFormed reports whether s has the shape of a secret with prefix, so garbage is refused
// before it reaches the store.
func wellFormed(s, prefix string) bool {
	body, ok := strings.CutPrefix(s, prefix)
	if !ok || len(body) != base64.RawURLEncoding.EncodedLen(secretBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(body)
	return err == nil
}

// DemoAPIKey derives the API key of the demo tenant named tenant from secret: HMAC-SHA256
// keyed by the secret, so anyone who knows DEMO_SECRET (boxoffice up, a scenario) can print
// or use the same keys without reading the database, and a deployment that changes the
// secret gets keys nobody else knows.
func DemoAPIKey(secret, tenant string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("boxoffice demo api key\x00" + tenant))
	return APIKeyPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
