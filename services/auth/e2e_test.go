package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
	authv1 "boxoffice.dev/proto/boxoffice/auth/v1"
	"boxoffice.dev/services/auth/token"
)

// process is one auth process run in-process by startAuth, with what the tests reach it by.
type process struct {
	base string // http://127.0.0.1:port
	grpc authv1.AuthClient
	nats string
}

// startAuth runs the whole service (testkit.RunProcess) with an embedded NATS and the demo
// data, and waits until it is ready.
func startAuth(t *testing.T) *process {
	t.Helper()
	ns := testkit.StartNATS(t)
	proc := testkit.RunProcess(t, Run, map[string]string{"NATS_URL": ns.ClientURL(), "SEED_DEMO": "true"})
	testkit.Eventually(t, 20*time.Second, "auth /readyz answers 200", proc.Ready)
	return &process{base: proc.HTTPURL, grpc: authv1.NewAuthClient(proc.Dial(t)), nats: ns.ClientURL()}
}

// response is what call returns.
type response struct {
	status int
	header http.Header
	body   []byte
}

// call sends a JSON body (or none when body is "") with the identity the gateway would set.
func (p *process) call(t *testing.T, method, path, body string, id identity.Identity) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	id.Set(req.Header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// decode reads res's JSON body into v, after checking its status.
func (res response) decode(t *testing.T, wantStatus int, v any) {
	t.Helper()
	if res.status != wantStatus {
		t.Fatalf("status = %d, want %d; body %s", res.status, wantStatus, res.body)
	}
	if err := json.Unmarshal(res.body, v); err != nil {
		t.Fatalf("decode %s: %v", res.body, err)
	}
}

func rpcContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var internal = identity.Identity{Tenant: "ten_demo_backstage", Plan: "internal"}

func TestEndToEnd(t *testing.T) {
	p := startAuth(t)

	// Sign up, log in, and verify the access token against the JWKS the service serves.
	var created struct{ ID, Email string }
	p.call(t, "POST", "/v1/auth/signup", `{"email":" Ana@Example.org","password":"correct horse","name":"Ana"}`, identity.Identity{}).
		decode(t, http.StatusCreated, &created)
	if created.Email != "ana@example.org" || !strings.HasPrefix(created.ID, "usr_") {
		t.Errorf("signup = %+v, want the normalised email and a usr_ id", created)
	}
	var pair tokenResponse
	login := p.call(t, "POST", "/v1/auth/login", `{"email":"ana@example.org","password":"correct horse"}`, identity.Identity{})
	login.decode(t, http.StatusOK, &pair)
	if pair.ExpiresIn != 900 || pair.TokenType != "Bearer" || login.header.Get("Cache-Control") != "no-store" {
		t.Errorf("login = %+v with Cache-Control %q, want expires_in 900, Bearer, no-store", pair, login.header.Get("Cache-Control"))
	}
	jwks := p.call(t, "GET", "/.well-known/jwks.json", "", identity.Identity{})
	keys, err := token.ParseJWKS(jwks.body)
	if err != nil || jwks.status != http.StatusOK {
		t.Fatalf("GET jwks = %d %s: %v", jwks.status, jwks.body, err)
	}
	if cc := jwks.header.Get("Cache-Control"); cc != "public, max-age=300" {
		t.Errorf("jwks Cache-Control = %q, want public, max-age=300 (half the 10m lead)", cc)
	}
	v := &token.Verifier{Keys: keys, Issuer: "boxoffice-auth", Audience: "boxoffice"}
	claims, err := v.Verify(pair.AccessToken)
	if err != nil || claims.Subject != created.ID {
		t.Fatalf("Verify(access token) = %+v, %v, want sub %s", claims, err, created.ID)
	}

	t.Run("refresh rotates and reuse revokes the session", func(t *testing.T) {
		var next tokenResponse
		p.call(t, "POST", "/v1/auth/refresh", `{"refresh_token":"`+pair.RefreshToken+`"}`, identity.Identity{}).
			decode(t, http.StatusOK, &next)
		if next.RefreshToken == pair.RefreshToken {
			t.Fatalf("refresh answered the same refresh token")
		}
		if c, err := v.Verify(next.AccessToken); err != nil || c.Subject != created.ID {
			t.Errorf("Verify(refreshed access token) = %+v, %v", c, err)
		}
		for _, tc := range []struct{ name, tok string }{{"spent token", pair.RefreshToken}, {"newest token after reuse", next.RefreshToken}} {
			res := p.call(t, "POST", "/v1/auth/refresh", `{"refresh_token":"`+tc.tok+`"}`, identity.Identity{})
			if res.status != http.StatusUnauthorized || res.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("refresh with the %s = %d %s, want 401 problem+json", tc.name, res.status, res.body)
			}
		}
	})

	t.Run("login answers the same for an unknown user and a wrong password", func(t *testing.T) {
		wrong := p.call(t, "POST", "/v1/auth/login", `{"email":"ana@example.org","password":"battery staple"}`, identity.Identity{})
		unknown := p.call(t, "POST", "/v1/auth/login", `{"email":"nobody@example.org","password":"battery staple"}`, identity.Identity{})
		if wrong.status != http.StatusUnauthorized || unknown.status != wrong.status || !bytes.Equal(wrong.body, unknown.body) {
			t.Errorf("wrong password = %d %s\nunknown user = %d %s\nwant the same 401", wrong.status, wrong.body, unknown.status, unknown.body)
		}
	})

	t.Run("bad input is a 4xx problem naming the field", func(t *testing.T) {
		tests := []struct {
			name, method, path, body string
			id                       identity.Identity
			status                   int
			field                    string
		}{
			{"signup bad email", "POST", "/v1/auth/signup", `{"email":"ana","password":"correct horse","name":"A"}`, identity.Identity{}, 400, "email"},
			{"signup short password", "POST", "/v1/auth/signup", `{"email":"b@example.org","password":"short","name":"B"}`, identity.Identity{}, 400, "password"},
			{"signup no name", "POST", "/v1/auth/signup", `{"email":"b@example.org","password":"correct horse"}`, identity.Identity{}, 400, "name"},
			{"signup taken email", "POST", "/v1/auth/signup", `{"email":"ANA@example.org","password":"correct horse","name":"A"}`, identity.Identity{}, 409, "email"},
			{"signup email not a string", "POST", "/v1/auth/signup", `{"email":7,"password":"correct horse","name":"A"}`, identity.Identity{}, 400, "email"},
			{"signup unknown field", "POST", "/v1/auth/signup", `{"email":"b@example.org","password":"correct horse","name":"B","admin":true}`, identity.Identity{}, 400, "admin"},
			{"signup not json", "POST", "/v1/auth/signup", `{`, identity.Identity{}, 400, ""},
			{"login no password", "POST", "/v1/auth/login", `{"email":"ana@example.org"}`, identity.Identity{}, 400, "password"},
			{"refresh no token", "POST", "/v1/auth/refresh", `{}`, identity.Identity{}, 400, "refresh_token"},
			{"refresh garbage token", "POST", "/v1/auth/refresh", `{"refresh_token":"bo_rt_nope"}`, identity.Identity{}, 401, ""},
			{"tenant bad plan", "POST", "/v1/admin/tenants", `{"name":"acme","plan":"gold"}`, internal, 400, "plan"},
			{"tenant bad name", "POST", "/v1/admin/tenants", `{"name":"Acme Inc","plan":"free"}`, internal, 400, "name"},
			{"tenant taken name", "POST", "/v1/admin/tenants", `{"name":"ticketsrus","plan":"free"}`, internal, 409, "name"},
			{"admin anonymous", "POST", "/v1/admin/tenants", `{"name":"acme","plan":"free"}`, identity.Identity{}, 401, ""},
			{"admin partner", "POST", "/v1/admin/keys/rotate", ``, identity.Identity{Tenant: "ten_x", Plan: "partner"}, 403, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := p.call(t, tt.method, tt.path, tt.body, tt.id)
				var prob struct {
					Status int
					Field  string
				}
				res.decode(t, tt.status, &prob)
				if ct := res.header.Get("Content-Type"); ct != "application/problem+json" || prob.Status != tt.status || prob.Field != tt.field {
					t.Errorf("%s %s = %s %s, want problem+json %d naming %q", tt.method, tt.path, ct, res.body, tt.status, tt.field)
				}
			})
		}
	})

	t.Run("tenants and API keys over REST and gRPC", func(t *testing.T) {
		var out struct {
			Tenant struct{ ID, Name, Plan string }
			APIKey string `json:"api_key"`
		}
		p.call(t, "POST", "/v1/admin/tenants", `{"name":"acme","plan":"partner"}`, internal).decode(t, http.StatusCreated, &out)
		if !strings.HasPrefix(out.APIKey, APIKeyPrefix) || out.Tenant.Name != "acme" {
			t.Fatalf("create tenant = %+v, want acme with a bo_live_ key", out)
		}
		tests := []struct {
			name         string
			key          string
			tenant, plan string
			code         codes.Code
		}{
			{"new tenant", out.APIKey, out.Tenant.ID, "partner", codes.OK},
			{"demo partner", DemoAPIKey("boxoffice-demo", "ticketsrus"), "ten_demo_ticketsrus", "partner", codes.OK},
			{"demo free", DemoAPIKey("boxoffice-demo", "freebie"), "ten_demo_freebie", "free", codes.OK},
			{"unknown", DemoAPIKey("boxoffice-demo", "nobody"), "", "", codes.NotFound},
			{"empty", "", "", "", codes.InvalidArgument},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := p.grpc.ResolveAPIKey(rpcContext(t), &authv1.ResolveAPIKeyRequest{ApiKey: tt.key})
				if status.Code(err) != tt.code || got.GetTenant() != tt.tenant || got.GetPlan() != tt.plan {
					t.Errorf("ResolveAPIKey(%s) = %v, %v, want %s/%s, %v", tt.name, got, err, tt.tenant, tt.plan, tt.code)
				}
			})
		}
	})

	t.Run("GetUser and GetJWKS over gRPC", func(t *testing.T) {
		u, err := p.grpc.GetUser(rpcContext(t), &authv1.GetUserRequest{Id: created.ID})
		if err != nil || u.GetEmail() != "ana@example.org" || u.GetName() != "Ana" {
			t.Errorf("GetUser(%s) = %v, %v, want ana@example.org", created.ID, u, err)
		}
		if _, err := p.grpc.GetUser(rpcContext(t), &authv1.GetUserRequest{Id: "usr_nobody"}); status.Code(err) != codes.NotFound {
			t.Errorf("GetUser(unknown) = %v, want NotFound", err)
		}
		set, err := p.grpc.GetJWKS(rpcContext(t), &authv1.GetJWKSRequest{})
		if err != nil || len(set.GetKeys()) != len(keys) || set.GetMaxAgeSeconds() != 300 {
			t.Fatalf("GetJWKS() = %v, %v, want the %d served keys, max age 300", set, err, len(keys))
		}
		for _, k := range set.GetKeys() {
			if _, ok := keys[k.GetKid()]; !ok || k.GetAlg() != "EdDSA" {
				t.Errorf("GetJWKS() key %v is not in the REST JWKS", k)
			}
		}
	})

	t.Run("demo fans log in", func(t *testing.T) {
		var demo tokenResponse
		p.call(t, "POST", "/v1/auth/login", `{"email":"fan0001@boxoffice.test","password":"boxoffice-demo"}`, identity.Identity{}).
			decode(t, http.StatusOK, &demo)
		if _, err := v.Verify(demo.AccessToken); err != nil {
			t.Errorf("Verify(demo fan's token) = %v", err)
		}
	})

	t.Run("rotate now publishes the next key before it signs", func(t *testing.T) {
		var out struct {
			Keys []struct{ Kid, State string }
		}
		p.call(t, "POST", "/v1/admin/keys/rotate", "", internal).decode(t, http.StatusOK, &out)
		if len(out.Keys) != 2 || out.Keys[0].State != "active" || out.Keys[1].State != "next" {
			t.Fatalf("rotate = %+v, want the active key and a next one", out.Keys)
		}
		after, err := token.ParseJWKS(p.call(t, "GET", "/.well-known/jwks.json", "", identity.Identity{}).body)
		if err != nil || len(after) != 2 {
			t.Fatalf("JWKS after rotate has %d keys (%v), want 2", len(after), err)
		}
		var fresh tokenResponse
		p.call(t, "POST", "/v1/auth/login", `{"email":"ana@example.org","password":"correct horse"}`, identity.Identity{}).
			decode(t, http.StatusOK, &fresh)
		if kid := headerKid(t, fresh.AccessToken); kid != out.Keys[0].Kid {
			t.Errorf("a token right after rotate is signed by %s, want the still-active %s", kid, out.Keys[0].Kid)
		}
	})

	t.Run("sign-up is announced on JetStream", func(t *testing.T) {
		js := testkit.JetStream(t, p.nats)
		var ev UserRegistered
		testkit.Eventually(t, 10*time.Second, "user.registered in stream AUTH", func() bool {
			s, err := js.Stream(rpcContext(t), Stream)
			if err != nil {
				return false
			}
			msg, err := s.GetLastMsgForSubject(rpcContext(t), "boxoffice.auth.user.registered")
			return err == nil && json.Unmarshal(msg.Data, &ev) == nil && msg.Header.Get("Nats-Msg-Id") == ev.ID
		})
		if ev.UserID != created.ID || ev.Type != "auth.user.registered" || ev.Email != "ana@example.org" {
			t.Errorf("event = %+v, want auth.user.registered for %s", ev, created.ID)
		}
	})
}

// headerKid returns the kid in a JWT's header, unverified.
func headerKid(t *testing.T, jwt string) string {
	t.Helper()
	var h struct{ Kid string }
	head, _, _ := strings.Cut(jwt, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil || json.Unmarshal(b, &h) != nil {
		t.Fatalf("token header %q is not base64url JSON", head)
	}
	return h.Kid
}
