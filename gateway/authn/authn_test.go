package authn

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"slices"
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
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	keys := NewAPIKeys(r, APIKeysOptions{TTL: 30 * time.Second, NegativeTTL: 10 * time.Second, Clock: clk.Clock()})
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
	trusted, err := ParseTrusted([]string{"10.0.0.0/8", "192.168.1.1", "2001:db8:f::/48"})
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := ParseTrusted([]string{"::ffff:10.0.0.0/104"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		trusted   []netip.Prefix
		peer      string
		xff       []string // one header line each
		want      string
		wantChain []string
	}{
		{"no proxies: the header is ignored", nil, "203.0.113.9:5000", []string{"1.2.3.4"}, "203.0.113.9", nil},
		{"untrusted peer: the header is ignored", trusted, "203.0.113.9:5000", []string{"1.2.3.4"}, "203.0.113.9", nil},
		{"trusted peer without the header: the peer", trusted, "10.0.0.5:5000", nil, "10.0.0.5", nil},
		{"trusted peer: the hop before it", trusted, "10.0.0.5:5000", []string{"198.51.100.7"}, "198.51.100.7", []string{"198.51.100.7"}},
		{"a spoofed leftmost entry is skipped", trusted, "10.0.0.5:5000", []string{"6.6.6.6, 198.51.100.7, 10.1.1.1"}, "198.51.100.7", []string{"198.51.100.7", "10.1.1.1"}},
		{"several header lines, in order", trusted, "192.168.1.1:80", []string{"6.6.6.6", "198.51.100.7, 10.0.0.2", "10.0.0.3"}, "198.51.100.7", []string{"198.51.100.7", "10.0.0.2", "10.0.0.3"}},
		{"all hops trusted: the leftmost", trusted, "10.0.0.5:5000", []string{"10.0.0.9, 10.0.0.8"}, "10.0.0.9", []string{"10.0.0.9", "10.0.0.8"}},
		{"address with a port", trusted, "10.0.0.1:1", []string{"203.0.113.7:5555"}, "203.0.113.7", []string{"203.0.113.7"}},
		{"bracketed IPv6", trusted, "10.0.0.1:1", []string{"[2001:db8::7]"}, "2001:db8::7", []string{"2001:db8::7"}},
		{"bracketed IPv6 with a port", trusted, "10.0.0.1:1", []string{"[2001:db8::7]:443"}, "2001:db8::7", []string{"2001:db8::7"}},
		{"bare IPv6", trusted, "10.0.0.1:1", []string{"2001:db8::7"}, "2001:db8::7", []string{"2001:db8::7"}},
		{"IPv6 with a zone", trusted, "10.0.0.1:1", []string{"fe80::7%eth0"}, "fe80::7", []string{"fe80::7"}},
		{"spaces and empty elements", trusted, "10.0.0.1:1", []string{" ,  203.0.113.7 ,, 10.0.0.2 ,"}, "203.0.113.7", []string{"203.0.113.7", "10.0.0.2"}},
		{"an IPv4-mapped hop is IPv4", trusted, "10.0.0.1:1", []string{"203.0.113.7, ::ffff:10.0.0.2"}, "203.0.113.7", []string{"203.0.113.7", "10.0.0.2"}},
		{"an IPv4-mapped peer is IPv4", trusted, "[::ffff:10.0.0.1]:1", []string{"203.0.113.7"}, "203.0.113.7", []string{"203.0.113.7"}},
		{"an IPv4-mapped trusted prefix is IPv4", mapped, "10.0.0.1:1", []string{"203.0.113.7"}, "203.0.113.7", []string{"203.0.113.7"}},
		{"a trusted IPv6 proxy", trusted, "[2001:db8:f::1]:443", []string{"203.0.113.7, 2001:db8:f::2"}, "203.0.113.7", []string{"203.0.113.7", "2001:db8:f::2"}},
		// A trusted proxy wrote what is not an address: the client is one it could not name,
		// neither the proxy (all its clients would share its bucket) nor anyone further left
		// (whom the client may have made up).
		{"unknown: not the proxy", trusted, "10.0.0.1:1", []string{"203.0.113.7, unknown"}, Unknown.String(), []string{"unknown"}},
		{"garbage behind trusted hops", trusted, "10.0.0.5:5000", []string{"198.51.100.7, nonsense, 10.0.0.2"}, Unknown.String(), []string{"nonsense", "10.0.0.2"}},
		{"garbage left of the client is never read", trusted, "10.0.0.5:5000", []string{"nonsense, 198.51.100.7"}, "198.51.100.7", []string{"198.51.100.7"}},
		{"a port on a trusted hop does not hide it", trusted, "10.0.0.1:1", []string{"203.0.113.7, 10.0.0.2:8080"}, "203.0.113.7", []string{"203.0.113.7", "10.0.0.2"}},
		{"IPv6 peer", nil, "[2001:db8::1]:443", nil, "2001:db8::1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			c := ClientIP{Trusted: tt.trusted}
			got, chain := c.Resolve(r)
			if got.String() != tt.want || !slices.Equal(chain, tt.wantChain) {
				t.Errorf("Resolve(peer %s, XFF %q) = %s, %q, want %s, %q", tt.peer, tt.xff, got, chain, tt.want, tt.wantChain)
			}
			if of := c.Of(r); of != got {
				t.Errorf("Of(peer %s, XFF %q) = %s, want %s as Resolve", tt.peer, tt.xff, of, got)
			}
		})
	}
}

func TestParseTrusted(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"10.0.0.0/8", "10.0.0.0/8", false},
		{"10.1.2.3/8", "10.0.0.0/8", false},
		{"192.168.1.1", "192.168.1.1/32", false},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", false},
		{"::ffff:192.168.1.1", "192.168.1.1/32", false},
		{"2001:db8::/32", "2001:db8::/32", false},
		{"fe80::1%eth0", "fe80::1/128", false},
		{"not-an-ip", "", true},
	}
	for _, tt := range tests {
		got, err := ParseTrusted([]string{tt.in})
		switch {
		case tt.wantErr && err == nil:
			t.Errorf("ParseTrusted(%q) = %v, want an error", tt.in, got)
		case !tt.wantErr && (err != nil || len(got) != 1 || got[0].String() != tt.want):
			t.Errorf("ParseTrusted(%q) = %v, %v, want [%s]", tt.in, got, err, tt.want)
		}
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
