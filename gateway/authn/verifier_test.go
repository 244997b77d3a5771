package authn

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/services/auth/token"
)

// countChecks makes v count the tokens it verifies in full (signature included).
func countChecks(t *testing.T, v *Verifier) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	check := v.check
	v.check = func(raw string) (token.Claims, string, ed25519.PublicKey, error) {
		n.Add(1)
		return check(raw)
	}
	return &n
}

// TestVerifierCache holds the cache of verified tokens to what it promises: a token is
// verified once, and still refused once it expires or once its key leaves the JWKS.
func TestVerifierCache(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// then runs after tok (signed by k1, valid for a minute) was verified once; it
		// returns the error of the second Verify of tok.
		then      func(ks *keyServer, jwks *JWKS, clk *fakeClock) error
		wantErr   error
		wantCheck int64 // full checks in all, the first one included
	}{
		{
			name:      "the same token again is not checked again",
			then:      func(*keyServer, *JWKS, *fakeClock) error { return nil },
			wantCheck: 1,
		},
		{
			name:      "an expired token is refused although it was cached",
			then:      func(_ *keyServer, _ *JWKS, clk *fakeClock) error { clk.Advance(61 * time.Second); return nil },
			wantErr:   token.ErrExpired,
			wantCheck: 2,
		},
		{
			name: "a token whose key was removed is refused after the JWKS refresh",
			then: func(ks *keyServer, jwks *JWKS, _ *fakeClock) error {
				ks.remove("k1")
				return jwks.Refresh(ctx)
			},
			wantErr:   token.ErrUnknownKey,
			wantCheck: 2,
		},
		{
			name: "a token whose kid now names another key is refused",
			then: func(ks *keyServer, jwks *JWKS, _ *fakeClock) error {
				ks.add("k1") // same kid, new key pair
				return jwks.Refresh(ctx)
			},
			wantErr:   token.ErrSignature,
			wantCheck: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := newKeyServer(t)
			k1 := ks.add("k1")
			clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
			jwks := NewJWKS(ks.URL, JWKSOptions{Clock: clk.Clock(), MinRefetch: 10 * time.Second})
			v := NewVerifier(jwks, "boxoffice-auth", "boxoffice", 0)
			if err := jwks.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			checks := countChecks(t, v)
			tok := sign(t, k1, "k1", "usr_1", clk.Now(), time.Minute)
			if c, err := v.Verify(ctx, tok); err != nil || c.Subject != "usr_1" {
				t.Fatalf("Verify(fresh token) = %+v, %v; want usr_1", c, err)
			}
			if err := tt.then(ks, jwks, clk); err != nil {
				t.Fatal(err)
			}
			c, err := v.Verify(ctx, tok)
			switch {
			case tt.wantErr == nil && (err != nil || c.Subject != "usr_1"):
				t.Errorf("Verify(token again) = %+v, %v; want usr_1", c, err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Verify(token again) = %v, want %v", err, tt.wantErr)
			}
			if got := checks.Load(); got != tt.wantCheck {
				t.Errorf("full checks = %d, want %d", got, tt.wantCheck)
			}
		})
	}
}

// TestVerifierCacheLimits checks what the cache keeps and for how long: CacheTTL at most,
// never a token that failed, never more than its size.
func TestVerifierCacheLimits(t *testing.T) {
	ctx := context.Background()
	ks := newKeyServer(t)
	k1 := ks.add("k1")
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	jwks := NewJWKS(ks.URL, JWKSOptions{Clock: clk.Clock()})
	v := NewVerifier(jwks, "boxoffice-auth", "boxoffice", 0)
	if err := jwks.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	checks := countChecks(t, v)

	long := sign(t, k1, "k1", "usr_1", clk.Now(), time.Hour)
	for range 2 {
		if _, err := v.Verify(ctx, long); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(CacheTTL)
	if _, err := v.Verify(ctx, long); err != nil {
		t.Fatalf("Verify(token after CacheTTL) = %v, want nil", err)
	}
	if got := checks.Load(); got != 2 {
		t.Errorf("full checks of a token used 3 times across CacheTTL = %d, want 2", got)
	}

	_, other, _ := ed25519.GenerateKey(nil)
	forged := sign(t, other, "k1", "usr_1", clk.Now(), time.Hour)
	before := checks.Load()
	for range 2 {
		if _, err := v.Verify(ctx, forged); !errors.Is(err, token.ErrSignature) {
			t.Fatalf("Verify(forged) = %v, want %v", err, token.ErrSignature)
		}
	}
	if got := checks.Load() - before; got != 2 {
		t.Errorf("full checks of a forged token sent twice = %d, want 2 (failures are not cached)", got)
	}

	v.cache = newSecretCache[verifiedToken](16)
	for i := range 100 {
		if _, err := v.Verify(ctx, sign(t, k1, "k1", fmt.Sprintf("usr_%d", i), clk.Now(), time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.cache.len(); n > 16 {
		t.Errorf("cache holds %d tokens after 100 distinct ones, want at most 16", n)
	}
}
