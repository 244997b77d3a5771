package auth

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/auth/token"
)

func testConfig() Config {
	c := DefaultConfig()
	c.PasswordCost = bcrypt.MinCost
	return c
}

// newTestService returns a Service over s on clock, with its first key in place.
func newTestService(t *testing.T, s *Store, clock *testkit.Clock) *Service {
	t.Helper()
	svc, err := NewService(s, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	svc.Clock = clock.Clock()
	if _, err := svc.RotateKeys(context.Background(), false); err != nil {
		t.Fatalf("RotateKeys: %v", err)
	}
	return svc
}

// verifier checks tokens against svc's JWKS as the gateway would: through its JSON.
func verifier(t *testing.T, svc *Service, clock *testkit.Clock) *token.Verifier {
	t.Helper()
	doc, err := json.Marshal(svc.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := token.ParseJWKS(doc)
	if err != nil {
		t.Fatalf("ParseJWKS(served JWKS): %v", err)
	}
	return &token.Verifier{Keys: keys, Issuer: "boxoffice-auth", Audience: "boxoffice", Now: clock.Now}
}

func TestServiceSignupLoginRefresh(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(storeT0, 0)
		svc := newTestService(t, s, clock)

		u, err := svc.Signup(ctx, " Ana@Example.org", "correct horse", "Ana")
		if err != nil {
			t.Fatalf("Signup: %v", err)
		}
		if u.Email != "ana@example.org" || u.ID == "" {
			t.Errorf("Signup() = %+v, want a normalised email and an id", u)
		}
		_, err = svc.Signup(ctx, "ana@EXAMPLE.org", "another pass", "Ana 2")
		wantCode(t, "Signup(same email, other case)", err, problem.Conflict)

		pair, err := svc.Login(ctx, "ANA@example.org ", "correct horse")
		if err != nil {
			t.Fatalf("Login: %v", err)
		}
		if pair.ExpiresIn != 15*time.Minute {
			t.Errorf("Login().ExpiresIn = %v, want 15m", pair.ExpiresIn)
		}
		claims, err := verifier(t, svc, clock).Verify(pair.AccessToken)
		if err != nil {
			t.Fatalf("Verify(access token): %v", err)
		}
		if claims.Subject != u.ID || !claims.ExpiresAt.Equal(storeT0.Add(15*time.Minute)) || claims.ID == "" {
			t.Errorf("access token claims = %+v, want sub %s, exp +15m and a jti", claims, u.ID)
		}
		if got, err := svc.User(ctx, u.ID); err != nil || got != u {
			t.Errorf("User(%s) = %+v, %v, want %+v", u.ID, got, err, u)
		}

		clock.Advance(time.Minute)
		next, err := svc.Refresh(ctx, pair.RefreshToken)
		if err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		if next.RefreshToken == pair.RefreshToken || next.AccessToken == pair.AccessToken {
			t.Errorf("Refresh() returned the old tokens, want new ones")
		}
		if c, err := verifier(t, svc, clock).Verify(next.AccessToken); err != nil || c.Subject != u.ID {
			t.Errorf("Verify(refreshed access token) = %+v, %v, want sub %s", c, err, u.ID)
		}
		if _, err := svc.Refresh(ctx, pair.RefreshToken); !errors.Is(err, errRefreshReused) {
			t.Errorf("Refresh(old token) = %v, want %v", err, errRefreshReused)
		}
		if _, err := svc.Refresh(ctx, next.RefreshToken); !errors.Is(err, errRefreshRevoked) {
			t.Errorf("Refresh(newest token after reuse) = %v, want %v", err, errRefreshRevoked)
		}
	})
}

func TestServiceLoginFailuresLookAlike(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		svc := newTestService(t, s, testkit.NewClock(storeT0, 0))
		if _, err := svc.Signup(ctx, "ana@example.org", "correct horse", "Ana"); err != nil {
			t.Fatal(err)
		}
		tests := []struct{ name, email, password string }{
			{"wrong password", "ana@example.org", "battery staple"},
			{"unknown email", "bruno@example.org", "correct horse"},
			{"not even an email", "bruno", "correct horse"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := svc.Login(ctx, tt.email, tt.password)
				if err != errBadCredentials {
					t.Errorf("Login(%q) = %v, want exactly %v", tt.email, err, errBadCredentials)
				}
			})
		}
	})
}

func TestServiceTenants(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		svc := newTestService(t, s, testkit.NewClock(storeT0, 0))
		ten, key, err := svc.CreateTenant(ctx, "ticketsrus", "partner")
		if err != nil {
			t.Fatalf("CreateTenant: %v", err)
		}
		if !wellFormed(key, APIKeyPrefix) || ten.Plan != PlanPartner {
			t.Errorf("CreateTenant() = %+v, %q, want a partner tenant and a bo_live_ key", ten, key)
		}
		if got, err := svc.ResolveAPIKey(ctx, key); err != nil || got != ten {
			t.Errorf("ResolveAPIKey() = %+v, %v, want %+v", got, err, ten)
		}
		tests := []struct {
			name string
			key  string
			code problem.Code
		}{
			{"empty", "", problem.Invalid},
			{"wrong shape", "hello", problem.NotFound},
			{"unknown", DemoAPIKey("x", "y"), problem.NotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := svc.ResolveAPIKey(ctx, tt.key)
				wantCode(t, "ResolveAPIKey("+tt.key+")", err, tt.code)
			})
		}
		_, _, err = svc.CreateTenant(ctx, "x", "partner")
		wantField(t, "CreateTenant(short name)", err, "name")
		_, _, err = svc.CreateTenant(ctx, "valid-name", "gold")
		wantField(t, "CreateTenant(gold)", err, "plan")
	})
}

// TestInstancesAgreeOnTheSigningKey runs two instances over one database and walks the
// clock through a rotation: they never disagree on which key signs, and a token signed
// before the rotation verifies until it expires, then its key leaves the JWKS.
func TestInstancesAgreeOnTheSigningKey(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(storeT0, 0)
		a, b := newTestService(t, s, clock), newTestService(t, s, clock)
		signer := func(svc *Service) string {
			k, ok := svc.keyring().Signer(clock.Now())
			if !ok {
				t.Fatalf("no signer at %v", clock.Now())
			}
			return k.ID
		}
		if signer(a) != signer(b) {
			t.Fatalf("after starting together a signs with %s, b with %s", signer(a), signer(b))
		}
		first := signer(a)
		if _, err := a.Signup(ctx, "ana@example.org", "correct horse", "Ana"); err != nil {
			t.Fatal(err)
		}
		clock.Advance(23*time.Hour + 55*time.Minute) // late: the successor signs a full lead from now
		old, err := a.Login(ctx, "ana@example.org", "correct horse")
		if err != nil {
			t.Fatal(err)
		}

		// Both instances tick; only one key is added, whoever wins the insert.
		var wg sync.WaitGroup
		for _, svc := range []*Service{a, b} {
			wg.Go(func() {
				if _, err := svc.RotateKeys(ctx, false); err != nil {
					t.Errorf("RotateKeys: %v", err)
				}
			})
		}
		wg.Wait()
		if ka, kb := kids(a.keyring().Keys()), kids(b.keyring().Keys()); ka != kb || len(a.keyring().Keys()) != 2 {
			t.Fatalf("keys after concurrent rotation: a %s, b %s, want the same two", ka, kb)
		}
		if signer(a) != first || signer(b) != first {
			t.Errorf("the new key signs before its publish lead passed")
		}
		if len(b.JWKS().Keys) != 2 {
			t.Errorf("JWKS during the lead has %d keys, want 2 (the next key published first)", len(b.JWKS().Keys))
		}

		clock.Advance(10 * time.Minute)
		if signer(a) == first || signer(a) != signer(b) {
			t.Errorf("after the lead a signs with %s, b with %s, want both on the new key", signer(a), signer(b))
		}
		if _, err := verifier(t, b, clock).Verify(old.AccessToken); err != nil {
			t.Errorf("a token of the retired key no longer verifies while live: %v", err)
		}

		clock.Advance(15 * time.Minute) // the retired key's last token has expired
		for _, svc := range []*Service{a, b} {
			if _, err := svc.RotateKeys(ctx, false); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(a.JWKS().Keys); n != 1 {
			t.Errorf("JWKS after the retired key's tokens expired has %d keys, want 1", n)
		}
		v := verifier(t, a, clock)
		v.Now = func() time.Time { return storeT0.Add(24 * time.Hour) } // as if the token were still live
		if _, err := v.Verify(old.AccessToken); !errors.Is(err, token.ErrUnknownKey) {
			t.Errorf("Verify(token of a removed key) = %v, want %v", err, token.ErrUnknownKey)
		}
	})
}

func TestRotateNow(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(storeT0, 0)
		svc := newTestService(t, s, clock)
		clock.Advance(time.Hour)
		ring, err := svc.RotateKeys(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		infos := svc.Keys()
		if len(infos) != 2 || infos[0].State != KeyActive || infos[1].State != KeyNext {
			t.Fatalf("Keys() after rotate now = %+v, want the active key and a next one", infos)
		}
		if want := clock.Now().Add(10 * time.Minute); !infos[1].ActivatesAt.Equal(want) {
			t.Errorf("forced key signs from %v, want %v (one publish lead)", infos[1].ActivatesAt, want)
		}
		if again, _ := svc.RotateKeys(ctx, true); len(again.Keys()) != len(ring.Keys()) {
			t.Errorf("a second rotate now while a key waits added another")
		}
	})
}
