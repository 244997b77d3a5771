// Package admin is the gateway's admin API: the running policy's limits, routes and
// services, read and changed live, the per-tenant overrides, and the upstreams' state. The
// playground turns its knobs through it.
//
// It is served on a listener of its own (127.0.0.1:9080 by default), never on the public
// one, and every request needs "Authorization: Bearer <ADMIN_TOKEN>", compared in constant
// time. Changes go through policy.Live like a file reload: validated whole, rejected with a
// 400 naming the field, the running policy untouched. Edits are held by this gateway replica
// (they survive a policy file reload, not a restart); per-tenant overrides are written to the
// rate_limit_rule table and announced on NATS, so every replica applies them.
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/problem"
)

// Upstreams reports the instances behind the gateway; *upstream.Pools is one.
type Upstreams interface {
	Snapshot() []upstream.ServiceStatus
}

var _ Upstreams = (*upstream.Pools)(nil)

// Tenants stores the per-tenant overrides; *policy.Table is one.
type Tenants interface {
	Load(ctx context.Context) ([]policy.TenantRule, error)
	Put(ctx context.Context, r policy.TenantRule) error
	Delete(ctx context.Context, tenant, route string) error
}

var _ Tenants = (*policy.Table)(nil)

// Options are the admin API's dependencies. Live and Token are required.
type Options struct {
	Live *policy.Live
	// Upstreams backs GET /admin/upstreams; nil answers an empty list.
	Upstreams Upstreams
	// Tenants backs /admin/tenant-limits; nil answers 404 there.
	Tenants Tenants
	// Announce tells the other replicas that the tenant overrides changed (a NATS publish on
	// policy.RulesChangedSubject); nil means this replica only.
	Announce func(ctx context.Context) error
	// Token is the bearer token every request must carry.
	Token string
	// Log records every change; nil discards. Tokens are never logged.
	Log *slog.Logger
}

// New returns the admin API's handler, with its whole route table.
func New(o Options) http.Handler {
	if o.Log == nil {
		o.Log = logging.Discard()
	}
	a := &api{Options: o}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/policy", a.getPolicy)
	mux.HandleFunc("GET /admin/limits", limits.listHandler(a))
	mux.HandleFunc("GET /admin/limits/{id}", limits.getHandler(a))
	mux.HandleFunc("PUT /admin/limits/{id}", limits.putHandler(a, false))
	mux.HandleFunc("PATCH /admin/limits/{id}", limits.putHandler(a, true))
	mux.HandleFunc("DELETE /admin/limits/{id}", a.deleteLimit)
	mux.HandleFunc("GET /admin/routes", routes.listHandler(a))
	mux.HandleFunc("GET /admin/routes/{id}", routes.getHandler(a))
	mux.HandleFunc("PUT /admin/routes/{id}", routes.putHandler(a, false))
	mux.HandleFunc("PATCH /admin/routes/{id}", routes.putHandler(a, true))
	mux.HandleFunc("GET /admin/services", services.listHandler(a))
	mux.HandleFunc("GET /admin/services/{id}", services.getHandler(a))
	mux.HandleFunc("PUT /admin/services/{id}", services.putHandler(a, false))
	mux.HandleFunc("PATCH /admin/services/{id}", services.putHandler(a, true))
	mux.HandleFunc("GET /admin/upstreams", a.listUpstreams)
	mux.HandleFunc("GET /admin/tenant-limits", a.listTenantLimits)
	mux.HandleFunc("PUT /admin/tenant-limits/{tenant}/{route}", a.putTenantLimit)
	mux.HandleFunc("DELETE /admin/tenant-limits/{tenant}/{route}", a.deleteTenantLimit)
	return requireToken(o.Token, mux)
}

type api struct{ Options }

// requireToken lets through requests bearing token. Both sides are hashed before the
// constant-time comparison, so neither the token's bytes nor its length leak through timing.
func requireToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(got))
		if token == "" || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="boxoffice-gateway-admin"`)
			problem.Write(w, r, nil, problem.New(problem.Unauthorized, "admin API: bearer token required"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fail answers a rejected change: a policy field error is the client's, named; the rest are
// ours.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	if fe, ok := errors.AsType[*policy.FieldError](err); ok {
		err = problem.InvalidField(fe.Field, "%s", fe.Problem)
	}
	problem.Write(w, r, a.Log, err)
}

func (a *api) changed(r *http.Request, what, id string) {
	a.Log.InfoContext(r.Context(), "admin change", "method", r.Method, "what", what, "id", id)
}
