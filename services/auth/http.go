package auth

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// signupRequest is the body of POST /v1/auth/signup.
type signupRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Name     string `json:"name"`
}

// handleSignup answers POST /v1/auth/signup with 201 {id, email}.
func handleSignup(log *slog.Logger, svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req signupRequest
		if err := httpapi.DecodeJSON(r, &req); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		u, err := svc.Signup(r.Context(), req.Email, req.Password, req.Name)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusCreated, struct {
			ID    string `json:"id"`
			Email string `json:"email"`
		}{u.ID, u.Email})
	})
}

// tokenResponse is the body of a successful login or refresh, in the shape of an OAuth 2.0
// token response (RFC 6749 section 5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"` // seconds
	TokenType    string `json:"token_type"`
}

func writeTokens(w http.ResponseWriter, p TokenPair) {
	// Tokens must not be kept by any cache between the client and us (RFC 6749 5.1).
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, tokenResponse{
		AccessToken: p.AccessToken, RefreshToken: p.RefreshToken,
		ExpiresIn: int(p.ExpiresIn / time.Second), TokenType: "Bearer",
	})
}

// handleLogin answers POST /v1/auth/login {email, password} with a token pair, or 401 with
// one body for every wrong pair.
func handleLogin(log *slog.Logger, svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Email    string `json:"email"`
			Password string `json:"password"`
		}
		if err := httpapi.DecodeJSON(r, &req); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		pair, err := svc.Login(r.Context(), req.Email, req.Password)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		writeTokens(w, pair)
	})
}

// handleRefresh answers POST /v1/auth/refresh {refresh_token} with a new pair; the token
// sent is spent.
func handleRefresh(log *slog.Logger, svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			RefreshToken string `json:"refresh_token"`
		}
		if err := httpapi.DecodeJSON(r, &req); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		pair, err := svc.Refresh(r.Context(), req.RefreshToken)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		writeTokens(w, pair)
	})
}

// handleJWKS answers GET /.well-known/jwks.json with the published keys, cacheable for
// half a publish lead (see Service.JWKSMaxAge).
func handleJWKS(log *slog.Logger, svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(svc.JWKSMaxAge()/time.Second)))
		w.Header().Set("Content-Type", "application/jwk-set+json")
		b, err := json.Marshal(svc.JWKS())
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		_, _ = w.Write(b)
	})
}

// tenantJSON is a tenant as the admin API shows it.
type tenantJSON struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      Plan      `json:"plan"`
	CreatedAt time.Time `json:"created_at"`
}

// handleCreateTenant answers POST /v1/admin/tenants {name, plan} with 201 {tenant, api_key}.
// The key is in this response only.
func handleCreateTenant(log *slog.Logger, svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Name string `json:"name"`
			Plan string `json:"plan"`
		}
		if err := httpapi.DecodeJSON(r, &req); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		t, key, err := svc.CreateTenant(r.Context(), req.Name, req.Plan)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		httpapi.WriteJSON(w, http.StatusCreated, struct {
			Tenant tenantJSON `json:"tenant"`
			APIKey string     `json:"api_key"`
		}{tenantJSON(t), key})
	})
}

// keyJSON is a signing key as the admin API shows it: never its private half.
type keyJSON struct {
	ID          string    `json:"kid"`
	Generation  int64     `json:"generation"`
	State       KeyState  `json:"state"`
	CreatedAt   time.Time `json:"created_at"`
	ActivatesAt time.Time `json:"activates_at"`
}

func writeKeys(w http.ResponseWriter, status int, keys []KeyInfo) {
	out := struct {
		Keys []keyJSON `json:"keys"`
	}{Keys: []keyJSON{}}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyJSON(k))
	}
	httpapi.WriteJSON(w, status, out)
}

// handleListKeys answers GET /v1/admin/keys with the published keys and their states.
func handleListKeys(svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeKeys(w, http.StatusOK, svc.Keys())
	})
}

// handleRotateKeys answers POST /v1/admin/keys/rotate: a new key is published now and signs
// one publish lead later (nothing is added while a key already waits). It answers the keys.
func handleRotateKeys(log *slog.Logger, svc *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := svc.RotateKeys(r.Context(), true); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		writeKeys(w, http.StatusOK, svc.Keys())
	})
}

// internalOnly lets through callers the gateway verified as an internal tenant. The gateway
// routes the admin API to internal callers only; checking here as well means a
// misconfigured route cannot hand out API keys.
func internalOnly(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := identity.FromRequest(r)
			switch {
			case id.Anonymous():
				problem.Write(w, r, log, problem.New(problem.Unauthorized, "the admin API needs an internal API key"))
			case Plan(id.Plan) != PlanInternal:
				problem.Write(w, r, log, problem.New(problem.Forbidden, "the admin API is for internal callers"))
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}
