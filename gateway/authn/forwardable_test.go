package authn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/services/auth/token"
)

// identityValues are verified identities, a JWT subject or a tenant or plan from the auth
// service, and whether the gateway can send them upstream unchanged.
var identityValues = []struct {
	name string
	v    string
	ok   bool
}{
	{"plain id", "usr_01J9ZK", true},
	{"inner space", "ten a", true},
	{"non-ASCII", "usr_ü", true},
	{"newline", "usr\nX-Boxoffice-Plan: internal", false},
	{"carriage return", "usr\r1", false},
	{"NUL", "usr\x001", false},
	{"DEL", "usr\x7f1", false},
	{"inner tab", "usr\t1", true},
	{"trailing tab", "usr_1\t", false},
	{"leading space", " usr_1", false},
	{"trailing space", "usr_1 ", false},
}

// subjectIs is a TokenVerifier that accepts every token as signed for its subject.
type subjectIs string

func (s subjectIs) Verify(context.Context, string) (token.Claims, error) {
	return token.Claims{Subject: string(s)}, nil
}

// An identity that cannot go in a header is refused with 401 at authentication: sent
// upstream, it makes the transport refuse the request, which counts as the instance's
// failure, or reaches the service as another identity.
func TestAuthenticateRefusesUnforwardableIdentity(t *testing.T) {
	for _, tt := range identityValues {
		t.Run(tt.name, func(t *testing.T) {
			r := &resolver{tenants: map[string]Tenant{
				"bo_live_tenant": {ID: tt.v, Plan: "partner"},
				"bo_live_plan":   {ID: "ten_a", Plan: tt.v},
			}}
			a := &Authenticator{Tokens: subjectIs(tt.v), Keys: r}
			for _, c := range []struct {
				what        string
				mode        policy.AuthMode
				bearer, key string
			}{
				{"JWT subject", policy.AuthUser, "any", ""},
				{"tenant", policy.AuthAPIKey, "", "bo_live_tenant"},
				{"plan", policy.AuthOptional, "", "bo_live_plan"},
			} {
				req := httptest.NewRequest("GET", "/", nil)
				if c.bearer != "" {
					req.Header.Set("Authorization", "Bearer "+c.bearer)
				}
				if c.key != "" {
					req.Header.Set(HeaderAPIKey, c.key)
				}
				caller, err := a.Authenticate(context.Background(), req, c.mode)
				switch {
				case tt.ok && err != nil:
					t.Errorf("Authenticate(%s %q) = %v, want accepted", c.what, tt.v, err)
				case !tt.ok && problem.CodeOf(err) != problem.Unauthorized:
					t.Errorf("Authenticate(%s %q) = %+v, %v; want 401", c.what, tt.v, caller, err)
				}
			}
		})
	}
}

// forwardable is exactly what survives the trip: an accepted value reaches a real server
// unchanged, a refused one is refused by the transport or arrives changed.
func TestForwardableMatchesTransport(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- identity.FromRequest(r).User
	}))
	defer srv.Close()
	for _, tt := range identityValues {
		t.Run(tt.name, func(t *testing.T) {
			if f := forwardable(tt.v); f != tt.ok {
				t.Errorf("forwardable(%q) = %v, want %v", tt.v, f, tt.ok)
			}
			req, err := http.NewRequest("GET", srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			identity.Identity{User: tt.v}.Set(req.Header)
			resp, err := srv.Client().Do(req)
			if err != nil {
				if tt.ok {
					t.Errorf("sending X-Boxoffice-User %q: %v, want it delivered", tt.v, err)
				}
				return
			}
			resp.Body.Close()
			if seen := <-got; (seen == tt.v) != tt.ok {
				t.Errorf("X-Boxoffice-User %q arrived as %q; forwardable says %v", tt.v, seen, tt.ok)
			}
		})
	}
}
