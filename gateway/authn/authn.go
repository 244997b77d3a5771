// Package authn establishes who is calling the gateway: a user by a JWT from the auth
// service, a partner tenant by an API key, and the client's IP.
//
// Tokens are verified here, at the edge, against the auth service's JWKS (see JWKS and
// Verifier); services behind the gateway never parse them and trust the identity headers the
// gateway sets instead (package platform/identity). That is only safe because the gateway
// strips any identity header a client sends before it authenticates. The API key is removed
// too: it is a secret the services have no use for.
package authn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/services/auth/token"
)

// HeaderAPIKey carries a partner's API key.
const HeaderAPIKey = policy.HeaderAPIKey

// Caller is an authenticated caller: its identity, and the id of the API key it used ("" when
// none; see KeyID).
type Caller struct {
	identity.Identity
	KeyID string
}

// TokenVerifier checks an access token; *Verifier is one.
type TokenVerifier interface {
	Verify(ctx context.Context, raw string) (token.Claims, error)
}

var _ TokenVerifier = (*Verifier)(nil)

// Authenticator authenticates requests by a route's auth mode. Tokens verifies JWTs and Keys
// resolves API keys; a nil one refuses every credential of its kind (a gateway without an
// auth service serves auth: none routes only). Safe for concurrent use when both are.
type Authenticator struct {
	Tokens TokenVerifier
	Keys   KeyResolver
}

// Authenticate strips the client's identity headers and its X-Api-Key from r, whatever the
// outcome, and a bearer token once verified, and returns the verified caller for mode. Errors are *problem.Error: Unauthorized
// for a missing or invalid credential (one whose identity cannot be sent upstream in a
// header is invalid: see forwardable), Unavailable when the auth service cannot be asked
// (an API key it cannot resolve, a token signed by a key not known while its key set cannot
// be fetched).
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request, mode policy.AuthMode) (Caller, error) {
	for _, h := range identity.Headers {
		r.Header.Del(h)
	}
	bearer, hasBearer := bearerToken(r)
	// The API key is the partner's secret: no service needs it once the gateway has resolved
	// it (they read the tenant and plan headers), and a service may log its headers.
	// A bearer token the gateway verifies goes too, below; Authorization stays on a route
	// that does not read it (auth: none), and with another scheme: it is not the gateway's.
	key := r.Header.Get(HeaderAPIKey)
	r.Header.Del(HeaderAPIKey)
	var c Caller
	switch mode {
	case policy.AuthNone:
		return c, nil
	case policy.AuthUser:
		if !hasBearer {
			return c, problem.New(problem.Unauthorized, "this route needs a bearer token")
		}
		key = ""
	case policy.AuthAPIKey:
		if key == "" {
			return c, problem.New(problem.Unauthorized, "this route needs an %s header", HeaderAPIKey)
		}
		hasBearer = false
	case policy.AuthOptional:
	default:
		return c, problem.New(problem.Internal, "unknown auth mode %q", mode)
	}
	if hasBearer {
		if a.Tokens == nil {
			return c, problem.New(problem.Unauthorized, "bearer tokens are not accepted here")
		}
		claims, err := a.Tokens.Verify(ctx, bearer)
		if err == nil && !forwardable(claims.Subject) {
			err = fmt.Errorf("%w: the subject cannot be sent upstream in a header", token.ErrClaims)
		}
		switch {
		case errors.Is(err, ErrKeysUnavailable):
			return c, &problem.Error{Code: problem.Unavailable, Message: "cannot check the token now", Err: err}
		case err != nil:
			return c, &problem.Error{Code: problem.Unauthorized, Message: reason(err), Err: err}
		}
		c.User = claims.Subject
		// Consumed, as Envoy's JWT filter does by default (forward: false): the services
		// read the identity headers, and a token that reached them would be a credential,
		// replayable at the gateway until it expires, in nine services' memory and logs.
		r.Header.Del("Authorization")
	}
	if key != "" {
		if a.Keys == nil {
			return c, problem.New(problem.Unauthorized, "API keys are not accepted here")
		}
		t, err := a.Keys.ResolveAPIKey(ctx, key)
		switch {
		case errors.Is(err, ErrUnknownAPIKey):
			return c, problem.New(problem.Unauthorized, "unknown API key")
		case err != nil:
			return c, &problem.Error{Code: problem.Unavailable, Message: "cannot check the API key now", Err: err}
		case !forwardable(t.ID) || !forwardable(t.Plan):
			return c, &problem.Error{Code: problem.Unauthorized, Message: "API key is invalid",
				Err: fmt.Errorf("api key %s: tenant %q or plan %q cannot be sent upstream in a header", KeyID(key), t.ID, t.Plan)}
		}
		c.Tenant, c.Plan, c.KeyID = t.ID, t.Plan, KeyID(key)
	}
	return c, nil
}

// bearerToken reads "Authorization: Bearer <token>"; the scheme is case-insensitive.
func bearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// forwardable reports whether v, a verified identity, can go upstream in an identity header
// as it is. A control character other than a tab makes the transport refuse the whole
// request, which would count as the instance's failure and, repeated, eject it for everyone;
// a leading or trailing space or tab would be trimmed by the service's server, turning one
// identity into another. Such an identity is refused with 401 instead. "" is forwardable: no
// header.
func forwardable(v string) bool {
	for i := range len(v) {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	blank := func(b byte) bool { return b == ' ' || b == '\t' }
	return v == "" || (!blank(v[0]) && !blank(v[len(v)-1]))
}

// reason says why a token was refused in words a client can act on, without echoing it.
func reason(err error) string {
	for _, e := range []error{token.ErrExpired, token.ErrNotYetValid, token.ErrAlgorithm, token.ErrUnknownKey,
		token.ErrSignature, token.ErrIssuer, token.ErrAudience, token.ErrClaims, token.ErrMalformed} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "token is invalid"
}
