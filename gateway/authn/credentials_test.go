package authn

import (
	"context"
	"net/http/httptest"
	"testing"

	"boxoffice.dev/gateway/policy"
)

// The partner's API key is a secret the services never need: it is gone from the request
// after authentication, whatever the mode and the outcome.
func TestAuthenticateRemovesAPIKey(t *testing.T) {
	r := &resolver{tenants: map[string]Tenant{"bo_live_good": {ID: "ten_a", Plan: "partner"}}}
	a := &Authenticator{Tokens: tokens{}, Keys: r}
	tests := []struct {
		name string
		mode policy.AuthMode
		key  string
	}{
		{"apikey, resolved", policy.AuthAPIKey, "bo_live_good"},
		{"apikey, unknown", policy.AuthAPIKey, "bo_live_nope"},
		{"optional, resolved", policy.AuthOptional, "bo_live_good"},
		{"user, ignored", policy.AuthUser, "bo_live_good"},
		{"none, ignored", policy.AuthNone, "bo_live_good"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("Authorization", "Bearer good-usr_1")
			req.Header.Set(HeaderAPIKey, tt.key)
			_, _ = a.Authenticate(context.Background(), req, tt.mode)
			if got := req.Header.Values(HeaderAPIKey); len(got) != 0 {
				t.Errorf("%s after Authenticate(%s) = %q, want none", HeaderAPIKey, tt.mode, got)
			}
		})
	}
}
