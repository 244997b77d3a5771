// Package token signs and verifies BoxOffice access tokens: EdDSA (Ed25519) JWTs with a kid
// naming the key of the auth service's JWKS that signed them.
//
// The gateway imports this package to verify tokens against the JWKS it fetched; the auth
// service uses it to sign. Both ends share one definition of the claims and of what a valid
// token is, so they cannot disagree.
//
// Encoding and parsing are left to github.com/golang-jwt/jwt/v5, a widely reviewed parser:
// the rules that matter are stated here on top of it. The algorithm is pinned to EdDSA
// before any key is looked up (so "none", or HS256 with the public key used as an HMAC
// secret, never get that far), the key is found by kid only, and exp is required.
package token

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Algorithm is the one JWS algorithm BoxOffice signs and accepts.
const Algorithm = "EdDSA"

// Claims are what an access token says. Times are whole seconds in the encoded token.
type Claims struct {
	Subject   string    // sub: the user id
	Issuer    string    // iss
	Audience  string    // aud
	ID        string    // jti: unique per token
	IssuedAt  time.Time // iat
	NotBefore time.Time // nbf
	ExpiresAt time.Time // exp
}

// Sign returns c as a compact JWT signed by key, with kid in its header.
func Sign(key ed25519.PrivateKey, kid string, c Claims) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", errors.New("sign token: not an Ed25519 private key")
	}
	if kid == "" {
		return "", errors.New("sign token: empty kid")
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.RegisteredClaims{
		Subject:   c.Subject,
		Issuer:    c.Issuer,
		Audience:  jwt.ClaimStrings{c.Audience},
		ID:        c.ID,
		IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
		NotBefore: jwt.NewNumericDate(c.NotBefore),
		ExpiresAt: jwt.NewNumericDate(c.ExpiresAt),
	})
	t.Header["kid"] = kid
	s, err := t.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}

// Why a token was refused. Every error Verify returns wraps exactly one of these.
var (
	ErrMalformed   = errors.New("token is malformed")
	ErrAlgorithm   = errors.New("token algorithm is not " + Algorithm)
	ErrUnknownKey  = errors.New("token kid is not a known key") // refetch the JWKS, once
	ErrSignature   = errors.New("token signature is invalid")
	ErrExpired     = errors.New("token is expired")
	ErrNotYetValid = errors.New("token is not valid yet")
	ErrIssuer      = errors.New("token issuer is wrong")
	ErrAudience    = errors.New("token audience is wrong")
	ErrClaims      = errors.New("token claims are invalid")
)

// Keys finds a verification key by kid. KeySet implements it; a verifier that refreshes
// its JWKS can implement it over its cache.
type Keys interface {
	PublicKey(kid string) (ed25519.PublicKey, bool)
}

// Verifier checks access tokens. Keys, Issuer and Audience are required; a token must name
// exactly that issuer and include that audience. Leeway (zero = none) tolerates clock skew
// between the signer and the verifier on exp, nbf and iat. Now is the clock; nil means
// time.Now. A Verifier is safe for concurrent use when Keys is.
type Verifier struct {
	Keys     Keys
	Issuer   string
	Audience string
	Leeway   time.Duration
	Now      func() time.Time
}

// Verify parses raw and returns its claims if it is an EdDSA JWT signed by one of v.Keys,
// current at v.Now and meant for v.Issuer and v.Audience.
func (v *Verifier) Verify(raw string) (Claims, error) {
	if v.Keys == nil || v.Issuer == "" || v.Audience == "" {
		return Claims{}, errors.New("verify token: verifier needs keys, an issuer and an audience")
	}
	now := v.Now
	if now == nil {
		now = time.Now
	}
	var rc jwt.RegisteredClaims
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{Algorithm}),
		jwt.WithIssuer(v.Issuer),
		jwt.WithAudience(v.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.Leeway),
		jwt.WithTimeFunc(now),
	)
	t, err := parser.ParseWithClaims(raw, &rc, func(t *jwt.Token) (any, error) {
		// Checked again here, not only by WithValidMethods, so a key is never handed out
		// for another algorithm even if the parser options change.
		if t.Method != jwt.SigningMethodEdDSA {
			return nil, ErrAlgorithm
		}
		kid, _ := t.Header["kid"].(string)
		key, ok := v.Keys.PublicKey(kid)
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownKey, kid)
		}
		return key, nil
	})
	if err != nil {
		return Claims{}, fmt.Errorf("verify token: %w", classify(t, err))
	}
	if rc.Subject == "" {
		return Claims{}, fmt.Errorf("verify token: %w: no subject", ErrClaims)
	}
	c := Claims{Subject: rc.Subject, Issuer: rc.Issuer, ID: rc.ID, Audience: v.Audience}
	for _, d := range []struct {
		dst *time.Time
		src *jwt.NumericDate
	}{{&c.IssuedAt, rc.IssuedAt}, {&c.NotBefore, rc.NotBefore}, {&c.ExpiresAt, rc.ExpiresAt}} {
		if d.src != nil {
			*d.dst = d.src.Time
		}
	}
	return c, nil
}

// classify maps the parser's error to one of this package's, keeping the parser's message.
func classify(t *jwt.Token, err error) error {
	if t != nil {
		alg, _ := t.Header["alg"].(string)
		if (alg != "" && alg != Algorithm) || (t.Method != nil && t.Method != jwt.SigningMethodEdDSA) {
			return fmt.Errorf("%w: %q", ErrAlgorithm, alg)
		}
	}
	for _, m := range []struct{ from, to error }{
		{ErrUnknownKey, ErrUnknownKey},
		{ErrAlgorithm, ErrAlgorithm},
		{jwt.ErrTokenMalformed, ErrMalformed},
		{jwt.ErrTokenUnverifiable, ErrMalformed},
		{jwt.ErrTokenSignatureInvalid, ErrSignature},
		{jwt.ErrTokenExpired, ErrExpired},
		{jwt.ErrTokenNotValidYet, ErrNotYetValid},
		{jwt.ErrTokenUsedBeforeIssued, ErrNotYetValid},
		{jwt.ErrTokenInvalidIssuer, ErrIssuer},
		{jwt.ErrTokenInvalidAudience, ErrAudience},
		{jwt.ErrTokenRequiredClaimMissing, ErrClaims},
	} {
		if errors.Is(err, m.from) {
			if m.from == m.to {
				return err
			}
			return fmt.Errorf("%w: %v", m.to, err)
		}
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}
