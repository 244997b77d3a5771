package authn

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/services/auth/token"
)

// TestUnknownKidWhileKeysCannotBeFetched checks the answer to a token whose kid the gateway
// does not know: 503 (try again) while the key set cannot be fetched, since the token may be
// valid and a 401 logs its user out; 401 once a key set fetched from the auth service says
// the kid is not in it.
func TestUnknownKidWhileKeysCannotBeFetched(t *testing.T) {
	other := func() ed25519.PrivateKey { _, k, _ := ed25519.GenerateKey(nil); return k }()
	tests := []struct {
		name string
		// setup brings the key server and the cache to the state under test and returns the
		// key and kid to sign with.
		setup func(t *testing.T, ks *keyServer, jwks *JWKS, clk *fakeClock) (ed25519.PrivateKey, string)
		want  problem.Code
	}{
		{"cold start, auth answers 503", func(t *testing.T, ks *keyServer, _ *JWKS, _ *fakeClock) (ed25519.PrivateKey, string) {
			ks.down.Store(true)
			return ks.add("k1"), "k1"
		}, problem.Unavailable},
		{"cold start, auth unreachable", func(t *testing.T, ks *keyServer, _ *JWKS, _ *fakeClock) (ed25519.PrivateKey, string) {
			k := ks.add("k1")
			ks.Close()
			return k, "k1"
		}, problem.Unavailable},
		{"cold start, within the retry wait of a failed fetch", func(t *testing.T, ks *keyServer, jwks *JWKS, _ *fakeClock) (ed25519.PrivateKey, string) {
			ks.down.Store(true)
			if err := jwks.Refresh(context.Background()); err == nil {
				t.Fatal("Refresh() with auth down = nil, want an error")
			}
			return ks.add("k1"), "k1"
		}, problem.Unavailable},
		{"keys known, refetch for the kid fails", func(t *testing.T, ks *keyServer, jwks *JWKS, clk *fakeClock) (ed25519.PrivateKey, string) {
			ks.add("k1")
			refresh(t, jwks)
			ks.down.Store(true)
			clk.Advance(11 * time.Second) // past MinRefetch: the kid asks for a fetch
			return ks.add("k2"), "k2"
		}, problem.Unavailable},
		{"keys known, last fetch failed, within MinRefetch", func(t *testing.T, ks *keyServer, jwks *JWKS, clk *fakeClock) (ed25519.PrivateKey, string) {
			ks.add("k1")
			refresh(t, jwks)
			ks.down.Store(true)
			clk.Advance(11 * time.Second)
			if err := jwks.Refresh(context.Background()); err == nil {
				t.Fatal("Refresh() with auth down = nil, want an error")
			}
			return ks.add("k2"), "k2"
		}, problem.Unavailable},
		{"keys fresh, kid not in them after a refetch", func(t *testing.T, ks *keyServer, jwks *JWKS, clk *fakeClock) (ed25519.PrivateKey, string) {
			ks.add("k1")
			refresh(t, jwks)
			clk.Advance(11 * time.Second)
			return other, "forged"
		}, problem.Unauthorized},
		{"keys fresh, kid not in them, within MinRefetch", func(t *testing.T, ks *keyServer, jwks *JWKS, _ *fakeClock) (ed25519.PrivateKey, string) {
			ks.add("k1")
			refresh(t, jwks)
			return other, "forged"
		}, problem.Unauthorized},
		{"keys fresh, a rotated-out kid", func(t *testing.T, ks *keyServer, jwks *JWKS, clk *fakeClock) (ed25519.PrivateKey, string) {
			k := ks.add("k0")
			ks.add("k1")
			refresh(t, jwks)
			ks.remove("k0")
			clk.Advance(11 * time.Second)
			refresh(t, jwks)
			return k, "k0"
		}, problem.Unauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := newKeyServer(t)
			clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
			jwks := NewJWKS(ks.URL, JWKSOptions{Clock: clk.Clock(), MinRefetch: 10 * time.Second})
			a := &Authenticator{Tokens: NewVerifier(jwks, "boxoffice-auth", "boxoffice", 0)}
			k, kid := tt.setup(t, ks, jwks, clk)
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Authorization", "Bearer "+sign(t, k, kid, "usr_1", clk.Now(), time.Minute))
			_, err := a.Authenticate(context.Background(), r, policy.AuthUser)
			if got := problem.CodeOf(err); err == nil || got != tt.want {
				t.Fatalf("Authenticate(token by kid %s) = %v (%s), want %s", kid, err, got, tt.want)
			}
			if unavailable := errors.Is(err, ErrKeysUnavailable); unavailable != (tt.want == problem.Unavailable) || !errors.Is(err, token.ErrUnknownKey) {
				t.Errorf("Authenticate() = %v: ErrKeysUnavailable %v, ErrUnknownKey %v; want %v, true",
					err, unavailable, errors.Is(err, token.ErrUnknownKey), tt.want == problem.Unavailable)
			}
			w := httptest.NewRecorder()
			problem.Write(w, r, nil, err)
			if retry := w.Header().Get("Retry-After"); (retry != "") != (tt.want == problem.Unavailable) {
				t.Errorf("answer %d has Retry-After %q; want one only with a 503", w.Code, retry)
			}
		})
	}
}

func refresh(t *testing.T, jwks *JWKS) {
	t.Helper()
	if err := jwks.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh() = %v, want nil", err)
	}
}
