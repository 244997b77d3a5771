package authn

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/services/auth/token"
)

// resolver is a KeyResolver over a map, counting calls; fail makes it unreachable.
type resolver struct {
	tenants map[string]Tenant
	calls   atomic.Int64
	fail    atomic.Bool
	delay   time.Duration
}

func (r *resolver) ResolveAPIKey(_ context.Context, key string) (Tenant, error) {
	r.calls.Add(1)
	time.Sleep(r.delay) // holds concurrent callers in flight together; not waiting for a state
	if r.fail.Load() {
		return Tenant{}, errors.New("auth unreachable")
	}
	t, ok := r.tenants[key]
	if !ok {
		return Tenant{}, ErrUnknownAPIKey
	}
	return t, nil
}

func TestAPIKeysCache(t *testing.T) {
	r := &resolver{tenants: map[string]Tenant{"bo_live_good": {ID: "ten_a", Plan: "partner"}}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	keys := NewAPIKeys(r, APIKeysOptions{TTL: 30 * time.Second, NegativeTTL: 10 * time.Second, Now: clk.Now})
	ctx := context.Background()

	for range 3 {
		if got, err := keys.ResolveAPIKey(ctx, "bo_live_good"); err != nil || got.ID != "ten_a" {
			t.Fatalf("ResolveAPIKey(good) = %+v, %v", got, err)
		}
		if _, err := keys.ResolveAPIKey(ctx, "bo_live_bad"); !errors.Is(err, ErrUnknownAPIKey) {
			t.Fatalf("ResolveAPIKey(bad) = %v, want ErrUnknownAPIKey", err)
		}
	}
	if got := r.calls.Load(); got != 2 {
		t.Errorf("resolver calls for 3 lookups of 2 keys = %d, want 2 (positive and negative cached)", got)
	}
	clk.Advance(11 * time.Second) // the negative entry expires, the positive one not yet
	_, _ = keys.ResolveAPIKey(ctx, "bo_live_good")
	_, _ = keys.ResolveAPIKey(ctx, "bo_live_bad")
	if got := r.calls.Load(); got != 3 {
		t.Errorf("resolver calls after the negative TTL = %d, want 3", got)
	}
	// Failures are not cached: the next request asks again.
	r.fail.Store(true)
	clk.Advance(time.Minute)
	for range 2 {
		if _, err := keys.ResolveAPIKey(ctx, "bo_live_good"); err == nil || errors.Is(err, ErrUnknownAPIKey) {
			t.Errorf("ResolveAPIKey with auth down = %v, want an unavailability error", err)
		}
	}
	if got := r.calls.Load(); got != 5 {
		t.Errorf("resolver calls after two failures = %d, want 5", got)
	}
}

func TestAPIKeysConcurrentLookupsShareOneCall(t *testing.T) {
	r := &resolver{tenants: map[string]Tenant{"k": {ID: "ten_a"}}, delay: 50 * time.Millisecond}
	keys := NewAPIKeys(r, APIKeysOptions{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { _, _ = keys.ResolveAPIKey(context.Background(), "k") })
	}
	wg.Wait()
	if got := r.calls.Load(); got != 1 {
		t.Errorf("resolver calls for 20 concurrent lookups = %d, want 1", got)
	}
}

func TestAPIKeysCacheIsBounded(t *testing.T) {
	r := &resolver{}
	keys := NewAPIKeys(r, APIKeysOptions{MaxEntries: 100})
	for i := range 1000 {
		_, _ = keys.ResolveAPIKey(context.Background(), "random-"+string(rune(i)))
	}
	if n := keys.cache.len(); n > 100 {
		t.Errorf("cache holds %d entries after 1000 random keys, want at most 100", n)
	}
}

func TestClientIP(t *testing.T) {
	trusted, err := ParseTrusted([]string{"10.0.0.0/8", "192.168.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		trusted []netip.Prefix
		peer    string
		xff     []string
		want    string
	}{
		{"no proxies: the header is ignored", nil, "203.0.113.9:5000", []string{"1.2.3.4"}, "203.0.113.9"},
		{"untrusted peer: the header is ignored", trusted, "203.0.113.9:5000", []string{"1.2.3.4"}, "203.0.113.9"},
		{"trusted peer: the hop before it", trusted, "10.0.0.5:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"a spoofed leftmost entry is skipped", trusted, "10.0.0.5:5000", []string{"6.6.6.6, 198.51.100.7, 10.1.1.1"}, "198.51.100.7"},
		{"several header lines", trusted, "192.168.1.1:80", []string{"6.6.6.6", "198.51.100.7"}, "198.51.100.7"},
		{"garbage stops the walk", trusted, "10.0.0.5:5000", []string{"198.51.100.7, nonsense"}, "10.0.0.5"},
		{"all hops trusted: the leftmost", trusted, "10.0.0.5:5000", []string{"10.0.0.9"}, "10.0.0.9"},
		{"IPv6 peer", nil, "[2001:db8::1]:443", nil, "2001:db8::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := (ClientIP{Trusted: tt.trusted}).Of(r).String(); got != tt.want {
				t.Errorf("Of(peer %s, XFF %q) = %s, want %s", tt.peer, tt.xff, got, tt.want)
			}
		})
	}
	if _, err := ParseTrusted([]string{"not-an-ip"}); err == nil {
		t.Errorf("ParseTrusted(not-an-ip) = nil error, want one")
	}
}

// tokens is a TokenVerifier accepting "good-<user>" only.
type tokens struct{}

func (tokens) Verify(_ context.Context, raw string) (token.Claims, error) {
	if len(raw) > 5 && raw[:5] == "good-" {
		return token.Claims{Subject: raw[5:]}, nil
	}
	return token.Claims{}, token.ErrExpired
}

func TestAuthenticate(t *testing.T) {
	r := &resolver{tenants: map[string]Tenant{"bo_live_good": {ID: "ten_a", Plan: "partner"}}}
	a := &Authenticator{Tokens: tokens{}, Keys: r}
	down := &Authenticator{Tokens: tokens{}, Keys: &resolver{}}
	down.Keys.(*resolver).fail.Store(true)
	tests := []struct {
		name     string
		a        *Authenticator
		mode     policy.AuthMode
		bearer   string
		key      string
		wantUser string
		wantTen  string
		wantCode problem.Code
	}{
		{"user with a good token", a, policy.AuthUser, "good-usr_1", "", "usr_1", "", ""},
		{"user without a token", a, policy.AuthUser, "", "", "", "", problem.Unauthorized},
		{"user with an expired token", a, policy.AuthUser, "old", "", "", "", problem.Unauthorized},
		{"user ignores an API key", a, policy.AuthUser, "good-usr_1", "bo_live_good", "usr_1", "", ""},
		{"apikey with a good key", a, policy.AuthAPIKey, "", "bo_live_good", "", "ten_a", ""},
		{"apikey with an unknown key", a, policy.AuthAPIKey, "", "bo_live_nope", "", "", problem.Unauthorized},
		{"apikey without a key", a, policy.AuthAPIKey, "good-usr_1", "", "", "", problem.Unauthorized},
		{"apikey with auth down", down, policy.AuthAPIKey, "", "bo_live_good", "", "", problem.Unavailable},
		{"optional anonymous", a, policy.AuthOptional, "", "", "", "", ""},
		{"optional with a token", a, policy.AuthOptional, "good-usr_2", "", "usr_2", "", ""},
		{"optional with a bad token", a, policy.AuthOptional, "old", "", "", "", problem.Unauthorized},
		{"optional with a key", a, policy.AuthOptional, "", "bo_live_good", "", "ten_a", ""},
		{"none ignores a bad token", a, policy.AuthNone, "old", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tt.bearer != "" {
				r.Header.Set("Authorization", "Bearer "+tt.bearer)
			}
			if tt.key != "" {
				r.Header.Set(HeaderAPIKey, tt.key)
			}
			// A forged identity never survives, whatever the mode.
			identity.Identity{User: "usr_admin", Tenant: "ten_demo_backstage", Plan: "internal"}.Set(r.Header)
			c, err := tt.a.Authenticate(context.Background(), r, tt.mode)
			var code problem.Code
			if err != nil {
				code = problem.CodeOf(err)
			}
			if code != tt.wantCode || c.User != tt.wantUser || c.Tenant != tt.wantTen {
				t.Errorf("Authenticate() = %+v, %v; want user %q tenant %q code %q", c, err, tt.wantUser, tt.wantTen, tt.wantCode)
			}
			if got := identity.FromRequest(r); got != (identity.Identity{}) {
				t.Errorf("identity headers after Authenticate = %+v, want none", got)
			}
		})
	}
}
