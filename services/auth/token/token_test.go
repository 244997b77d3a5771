package token

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// newKey derives a key from a fixed seed so failures reproduce.
func newKey(t *testing.T, seed byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune('a'+seed)), ed25519.SeedSize)))
	return priv.Public().(ed25519.PublicKey), priv
}

// unsigned builds a token by hand with the given header, for algorithms Sign refuses to use.
func unsigned(t *testing.T, header map[string]any, c jwt.RegisteredClaims, sig string) string {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	p, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc(h) + "." + enc(p) + "." + sig
}

func TestVerify(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	pub, priv := newKey(t, 0)
	_, otherPriv := newKey(t, 1)
	keys := KeySet{"k1": pub}
	good := Claims{Subject: "usr_1", Issuer: "boxoffice-auth", Audience: "boxoffice", ID: "j1",
		IssuedAt: now.Add(-time.Minute), NotBefore: now.Add(-time.Minute), ExpiresAt: now.Add(14 * time.Minute)}
	with := func(f func(c *Claims)) Claims { c := good; f(&c); return c }
	sign := func(key ed25519.PrivateKey, kid string, c Claims) string {
		s, err := Sign(key, kid, c)
		if err != nil {
			t.Fatalf("Sign: %v", err)
		}
		return s
	}
	registered := jwt.RegisteredClaims{Subject: "usr_1", Issuer: "boxoffice-auth", Audience: jwt.ClaimStrings{"boxoffice"},
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))}
	hs256, err := jwt.NewWithClaims(jwt.SigningMethodHS256, registered).SignedString([]byte(pub))
	if err != nil {
		t.Fatal(err)
	}
	hs256WithKid := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, registered)
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString([]byte(pub))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}()
	valid := sign(priv, "k1", good)
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"usr_admin","iss":"boxoffice-auth","aud":["boxoffice"],"exp":9999999999}`)) + "." + parts[2]

	tests := []struct {
		name   string
		token  string
		leeway time.Duration
		want   error // nil = valid
	}{
		{name: "valid", token: valid},
		{name: "expired", token: sign(priv, "k1", with(func(c *Claims) { c.ExpiresAt = now.Add(-time.Second) })), want: ErrExpired},
		{name: "expired within leeway", token: sign(priv, "k1", with(func(c *Claims) { c.ExpiresAt = now.Add(-time.Second) })), leeway: 5 * time.Second},
		{name: "nbf in the future", token: sign(priv, "k1", with(func(c *Claims) { c.NotBefore = now.Add(time.Minute) })), want: ErrNotYetValid},
		{name: "iat in the future", token: sign(priv, "k1", with(func(c *Claims) { c.IssuedAt = now.Add(time.Minute) })), want: ErrNotYetValid},
		{name: "wrong issuer", token: sign(priv, "k1", with(func(c *Claims) { c.Issuer = "evil" })), want: ErrIssuer},
		{name: "wrong audience", token: sign(priv, "k1", with(func(c *Claims) { c.Audience = "partners" })), want: ErrAudience},
		{name: "no subject", token: sign(priv, "k1", with(func(c *Claims) { c.Subject = "" })), want: ErrClaims},
		{name: "alg none", token: unsigned(t, map[string]any{"alg": "none", "typ": "JWT", "kid": "k1"}, registered, ""), want: ErrAlgorithm},
		{name: "alg HS256 with the public key as secret", token: hs256WithKid, want: ErrAlgorithm},
		{name: "alg HS256 without kid", token: hs256, want: ErrAlgorithm},
		{name: "unknown alg", token: unsigned(t, map[string]any{"alg": "XX512", "kid": "k1"}, registered, "c2ln"), want: ErrAlgorithm},
		{name: "unknown kid", token: sign(priv, "k9", good), want: ErrUnknownKey},
		{name: "no kid", token: unsigned(t, map[string]any{"alg": "EdDSA"}, registered, "c2ln"), want: ErrUnknownKey},
		{name: "signed by a retired and removed key", token: sign(otherPriv, "k0", good), want: ErrUnknownKey},
		{name: "another key under a known kid", token: sign(otherPriv, "k1", good), want: ErrSignature},
		{name: "tampered claims", token: tampered, want: ErrSignature},
		{name: "not a jwt", token: "hello", want: ErrMalformed},
		{name: "empty", token: "", want: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &Verifier{Keys: keys, Issuer: "boxoffice-auth", Audience: "boxoffice", Leeway: tt.leeway, Now: func() time.Time { return now }}
			got, err := v.Verify(tt.token)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Verify() error = %v, want nil", err)
				}
				if got.Subject != "usr_1" || got.ID != "j1" || got.Issuer != "boxoffice-auth" || !got.IssuedAt.Equal(good.IssuedAt) {
					t.Errorf("Verify() = %+v, want the signed claims", got)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify() error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifierNeedsConfiguration(t *testing.T) {
	pub, priv := newKey(t, 0)
	tok, err := Sign(priv, "k1", Claims{Subject: "u", Issuer: "i", Audience: "a", ExpiresAt: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]*Verifier{
		"no keys":     {Issuer: "i", Audience: "a"},
		"no issuer":   {Keys: KeySet{"k1": pub}, Audience: "a"},
		"no audience": {Keys: KeySet{"k1": pub}, Issuer: "i"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Verify(tok); err == nil {
				t.Errorf("Verify() with %s = nil error, want one", name)
			}
		})
	}
}

func TestSignRefusesBadKeys(t *testing.T) {
	_, priv := newKey(t, 0)
	tests := []struct {
		name string
		key  ed25519.PrivateKey
		kid  string
	}{
		{"short key", priv[:10], "k1"},
		{"empty kid", priv, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Sign(tt.key, tt.kid, Claims{Subject: "u"}); err == nil {
				t.Errorf("Sign(%s) = nil error, want one", tt.name)
			}
		})
	}
}
