package authn

import (
	"boxoffice.dev/platform/clock"

	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/services/auth/token"
)

// keyServer serves a JWKS whose keys a test changes, counting fetches.
type keyServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    map[string]ed25519.PrivateKey
	fetches atomic.Int64
	down    atomic.Bool
}

func newKeyServer(t *testing.T) *keyServer {
	t.Helper()
	ks := &keyServer{keys: map[string]ed25519.PrivateKey{}}
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.fetches.Add(1)
		if ks.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		ks.mu.Lock()
		var set token.JWKS
		for kid, k := range ks.keys {
			set.Keys = append(set.Keys, token.PublicJWK(kid, k.Public().(ed25519.PublicKey)))
		}
		ks.mu.Unlock()
		w.Header().Set("Cache-Control", "public, max-age=300")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(ks.Close)
	return ks
}

// add publishes a new key and returns it.
func (ks *keyServer) add(kid string) ed25519.PrivateKey {
	_, k, _ := ed25519.GenerateKey(nil)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.keys[kid] = k
	return k
}

func (ks *keyServer) remove(kid string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	delete(ks.keys, kid)
}

// fakeClock is a settable test clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// Clock is c as the time source the code under test takes.
func (c *fakeClock) Clock() clock.Clock { return clock.Func(c.Now) }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func sign(t *testing.T, k ed25519.PrivateKey, kid, sub string, issued time.Time, ttl time.Duration) string {
	t.Helper()
	s, err := token.Sign(k, kid, token.Claims{Subject: sub, Issuer: "boxoffice-auth", Audience: "boxoffice", ID: "jti-" + sub,
		IssuedAt: issued, NotBefore: issued, ExpiresAt: issued.Add(ttl)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forge builds a token with any header, signed with HMAC-SHA256 under secret.
func forge(header, claims map[string]any, secret []byte) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	unsigned := enc(header) + "." + enc(claims)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(unsigned))
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func TestVerifier(t *testing.T) {
	ks := newKeyServer(t)
	k1 := ks.add("k1")
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	jwks := NewJWKS(ks.URL, JWKSOptions{Clock: clk.Clock(), MinRefetch: 10 * time.Second})
	v := NewVerifier(jwks, "boxoffice-auth", "boxoffice", 0)
	ctx := context.Background()
	now := clk.Now()

	// The first token fetches the key set.
	if c, err := v.Verify(ctx, sign(t, k1, "k1", "usr_1", now, time.Minute)); err != nil || c.Subject != "usr_1" {
		t.Fatalf("Verify(fresh token) = %+v, %v; want usr_1", c, err)
	}
	// A key published later is learnt from the first token it signs.
	k2 := ks.add("k2")
	clk.Advance(11 * time.Second)
	if _, err := v.Verify(ctx, sign(t, k2, "k2", "usr_2", clk.Now(), time.Minute)); err != nil {
		t.Fatalf("Verify(token by a new key) = %v, want nil", err)
	}
	// A key rotated out of the JWKS stops verifying once the gateway refreshes.
	ks.remove("k1")
	if err := jwks.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	pub := k1.Public().(ed25519.PublicKey)
	claims := map[string]any{"sub": "usr_1", "iss": "boxoffice-auth", "aud": "boxoffice", "iat": clk.Now().Unix(), "exp": clk.Now().Add(time.Minute).Unix()}
	tests := []struct {
		name string
		raw  string
		want error
	}{
		{"rotated-out key", sign(t, k1, "k1", "usr_1", clk.Now(), time.Minute), token.ErrUnknownKey},
		{"expired", sign(t, k2, "k2", "usr_1", clk.Now().Add(-2*time.Minute), time.Minute), token.ErrExpired},
		{"not yet valid", sign(t, k2, "k2", "usr_1", clk.Now().Add(time.Hour), time.Minute), token.ErrNotYetValid},
		{"HS256 with the public key as secret", forge(map[string]any{"alg": "HS256", "typ": "JWT", "kid": "k2"}, claims, pub), token.ErrAlgorithm},
		{"alg none", forge(map[string]any{"alg": "none", "kid": "k2"}, claims, nil), token.ErrAlgorithm},
		{"signed by an unpublished key", sign(t, func() ed25519.PrivateKey { _, k, _ := ed25519.GenerateKey(nil); return k }(), "k2", "usr_1", clk.Now(), time.Minute), token.ErrSignature},
		{"garbage", "not.a.token", token.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := v.Verify(ctx, tt.raw); !errors.Is(err, tt.want) {
				t.Errorf("Verify() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestJWKSUnknownKidRefetchIsRateLimited(t *testing.T) {
	ks := newKeyServer(t)
	k := ks.add("k1")
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	jwks := NewJWKS(ks.URL, JWKSOptions{Clock: clk.Clock(), MinRefetch: 10 * time.Second})
	v := NewVerifier(jwks, "boxoffice-auth", "boxoffice", 0)
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(t, k, "k1", "usr_1", clk.Now(), time.Minute)); err != nil {
		t.Fatal(err)
	}
	// A flood of tokens naming unknown kids, concurrently and in a row, within MinRefetch.
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, _ = v.Verify(ctx, sign(t, k, "kid-"+string(rune('a'+i%26)), "usr_x", clk.Now(), time.Minute))
		})
	}
	wg.Wait()
	if got := ks.fetches.Load(); got != 1 {
		t.Errorf("JWKS fetches after 50 unknown kids within MinRefetch = %d, want 1", got)
	}
	clk.Advance(11 * time.Second)
	_, _ = v.Verify(ctx, sign(t, k, "kid-z", "usr_x", clk.Now(), time.Minute))
	if got := ks.fetches.Load(); got != 2 {
		t.Errorf("JWKS fetches after MinRefetch passed = %d, want 2", got)
	}
}

// The gateway may start before auth: a failed first fetch must not lock out every token for a
// whole MinRefetch once auth answers.
func TestJWKSFirstFetchFailureRetriesSoon(t *testing.T) {
	ks := newKeyServer(t)
	k := ks.add("k1")
	ks.down.Store(true)
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	jwks := NewJWKS(ks.URL, JWKSOptions{Clock: clk.Clock(), MinRefetch: 10 * time.Second})
	v := NewVerifier(jwks, "boxoffice-auth", "boxoffice", 0)
	ctx := context.Background()
	tok := sign(t, k, "k1", "usr_1", clk.Now(), time.Minute)
	if _, err := v.Verify(ctx, tok); err == nil {
		t.Fatal("Verify() with auth down and no keys = nil, want an error")
	}
	ks.down.Store(false)
	if _, err := v.Verify(ctx, tok); err == nil || ks.fetches.Load() != 1 {
		t.Fatalf("Verify() at once after a failed fetch = %v with %d fetches, want still refused (1 fetch)", err, ks.fetches.Load())
	}
	clk.Advance(coldRefetch)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("Verify() %v after auth came back = %v, want the key fetched and the token accepted", coldRefetch, err)
	}
}

func TestJWKSKeepsKeysWhileAuthIsDown(t *testing.T) {
	ks := newKeyServer(t)
	k := ks.add("k1")
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	jwks := NewJWKS(ks.URL, JWKSOptions{Clock: clk.Clock()})
	v := NewVerifier(jwks, "boxoffice-auth", "boxoffice", 0)
	ctx := context.Background()
	if err := jwks.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	ks.down.Store(true)
	clk.Advance(10 * time.Minute) // past max-age
	if err := jwks.Refresh(ctx); err == nil {
		t.Fatalf("Refresh() with auth down = nil, want an error")
	}
	if _, err := v.Verify(ctx, sign(t, k, "k1", "usr_1", clk.Now(), time.Minute)); err != nil {
		t.Errorf("Verify() while auth is down = %v, want the known key to still verify", err)
	}
}

func TestMaxAge(t *testing.T) {
	tests := []struct {
		cc   string
		want time.Duration
	}{
		{"public, max-age=300", 300 * time.Second},
		{"max-age=86400", maxKeyAge},
		{"max-age=9999999999", maxKeyAge},             // past a Duration's range in nanoseconds
		{"max-age=99999999999999999999", time.Minute}, // past int64: not a number we can read
		{"max-age=0", time.Minute},
		{"no-cache", time.Minute},
		{"", time.Minute},
	}
	for _, tt := range tests {
		if got := maxAge(tt.cc, time.Minute); got != tt.want {
			t.Errorf("maxAge(%q) = %v, want %v", tt.cc, got, tt.want)
		}
	}
}
