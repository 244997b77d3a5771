package authn

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/services/auth/token"
)

// TestClientHangingUpDoesNotFailTheKeyFetch checks that a request whose unknown kid started a
// key fetch cannot fail that fetch by hanging up: the fetch is everyone's, and a failed one
// would answer every unknown kid 503 (and refuse the valid token) until the next.
func TestClientHangingUpDoesNotFailTheKeyFetch(t *testing.T) {
	ks := newKeyServer(t)
	k := ks.add("k1")
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		<-release
		ks.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	v := NewVerifier(NewJWKS(gate.URL, JWKSOptions{Clock: clk.Clock(), MinRefetch: 10 * time.Second}), "boxoffice-auth", "boxoffice", 0)
	tok := sign(t, k, "k1", "usr_1", clk.Now(), time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := v.Verify(ctx, tok); done <- err }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the key server never saw the fetch")
	}
	cancel() // the client hangs up while its token's fetch is in flight
	close(release)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Verify() did not return after the fetch was answered")
	}

	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Errorf("Verify(a token by the fetched key) = %v, want it accepted", err)
	}
	_, forged, _ := ed25519.GenerateKey(nil)
	if _, err := v.Verify(context.Background(), sign(t, forged, "forged", "usr_1", clk.Now(), time.Minute)); !errors.Is(err, token.ErrUnknownKey) || errors.Is(err, ErrKeysUnavailable) {
		t.Errorf("Verify(an unknown kid) = %v, want token.ErrUnknownKey alone (the key set was fetched)", err)
	}
	if got := ks.fetches.Load(); got != 1 {
		t.Errorf("key fetches = %d, want 1", got)
	}
}
