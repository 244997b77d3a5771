// Package admin is the gateway's admin API: the running policy's limits, routes and
// services, read and changed live, the per-tenant overrides, and the upstreams' state. The
// playground turns its knobs through it.
//
// It is served on a listener of its own (127.0.0.1:9080 by default), never on the public
// one, with the process's /control hook; every request but GET /metrics, which a scraper
// reads, needs "Authorization: Bearer <ADMIN_TOKEN>", compared in constant time. Changes go
// through policy.Live like a file reload: validated whole, refused with a 400 naming the
// field, the running policy untouched. Every replica applies a change, whichever one took
// it, and keeps it across a restart, until DELETE /admin/edits gives the policy back to the
// file (docs/lessons/gateway.md, "Policy is data"). Each change is recorded in the audit
// trail with the element before and after, in the same transaction as its row (Audit).
//
// Routes:
//
//	GET          /admin/policy                           the running policy, the tenant overrides, skipped edits
//	GET          /admin/limits, /admin/routes, /admin/services, and /{id} for one
//	PUT, PATCH   /admin/limits/{id}, /admin/routes/{id}, /admin/services/{id}
//	                                                     PUT replaces the element; PATCH keeps the
//	                                                     fields sent, over the file's
//	DELETE       /admin/limits/{id}                      takes the limit off the policy and its routes,
//	                                                     whatever the file says, until
//	                                                     DELETE /admin/edits/limit/{id}
//	GET          /admin/edits                            the stored edits, with when each was written
//	DELETE       /admin/edits                            drops every edit: back to the policy file
//	DELETE       /admin/edits/{kind}/{id}                drops one (kind limit, route or service)
//	GET          /admin/tenant-limits
//	PUT, DELETE  /admin/tenant-limits/{tenant}/{route}   route * for every route
//	GET          /admin/upstreams                        every instance's readiness and load
//	GET          /admin/audit                            who changed the policy, when, before and after
//	GET          /admin/hotkeys                          the keys taking most decisions, all replicas
//	GET, PUT     /control                                the playground's fault-injection knobs
//	GET          /metrics                                Prometheus metrics, no token
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
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/control"
	"boxoffice.dev/platform/httpserver"
	"boxoffice.dev/platform/logging"
	"boxoffice.dev/platform/problem"
)

// Upstreams reports the instances behind the gateway; *upstream.Pools is one.
type Upstreams interface {
	Snapshot() []upstream.ServiceStatus
}

var _ Upstreams = (*upstream.Pools)(nil)

// Tenants stores the per-tenant overrides; *policystore.Table is one, and *policystore.Store
// one whose database may be down.
type Tenants interface {
	Load(ctx context.Context) ([]policy.TenantRule, error)
	Put(ctx context.Context, r policy.TenantRule) error
	Delete(ctx context.Context, tenant, route string) error
}

var (
	_ Tenants = (*policystore.Table)(nil)
	_ Tenants = (*policystore.Store)(nil)
)

// Edits stores the admin edits; *policystore.Table is one, and *policystore.Store one whose
// database may be down.
type Edits interface {
	LoadEdits(ctx context.Context) ([]policy.Edit, error)
	PutEdit(ctx context.Context, e policy.Edit) error
	DeleteEdit(ctx context.Context, kind policy.EditKind, id string) error
	ResetEdits(ctx context.Context) error
}

var (
	_ Edits = (*policystore.Table)(nil)
	_ Edits = (*policystore.Store)(nil)
)

// Options are the admin API's dependencies. Live and Token are required.
type Options struct {
	Live *policy.Live
	// Upstreams backs GET /admin/upstreams; nil answers an empty list.
	Upstreams Upstreams
	// Tenants backs /admin/tenant-limits; nil answers 404 there.
	Tenants Tenants
	// Edits stores the edits so that every replica applies them and they outlive a restart;
	// nil keeps them in this replica alone, until it stops.
	Edits Edits
	// Announce tells the other replicas that a table changed: a NATS publish on subject,
	// policystore.PolicyChangedSubject or policystore.RulesChangedSubject. nil means they
	// learn it at their next refresh.
	Announce func(ctx context.Context, subject string) error
	// Token is the bearer token every request must carry, but for GET /metrics.
	Token string
	// Metrics, the process's Prometheus metrics, is served at GET /metrics without the
	// token, for a scraper: the public listener does not serve it (server.Spec.Edge). nil
	// means 404.
	Metrics http.Handler
	// Control, the playground's fault-injection hook (platform/control), is served at
	// /control behind the token, off the public listener like Metrics. nil means 404.
	Control http.Handler
	// Audit records every change to the tables with the change, and answers GET
	// /admin/audit; nil records nothing and answers 404 there.
	Audit Audit
	// HotKeys answers GET /admin/hotkeys; nil answers 404 there.
	HotKeys HotKeys
	// Replica names this gateway replica in the audit trail.
	Replica string
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
	mux.HandleFunc("GET /admin/edits", a.listEdits)
	mux.HandleFunc("DELETE /admin/edits", a.resetEdits)
	mux.HandleFunc("DELETE /admin/edits/{kind}/{id}", a.deleteEdit)
	mux.HandleFunc("GET /admin/upstreams", a.listUpstreams)
	mux.HandleFunc("GET /admin/hotkeys", a.listHotKeys)
	mux.HandleFunc("GET /admin/tenant-limits", a.listTenantLimits)
	mux.HandleFunc("PUT /admin/tenant-limits/{tenant}/{route}", a.putTenantLimit)
	mux.HandleFunc("DELETE /admin/tenant-limits/{tenant}/{route}", a.deleteTenantLimit)
	mux.HandleFunc("GET /admin/audit", a.listAudit)
	if o.Control != nil {
		mux.Handle(control.Path, o.Control)
	}
	// Path ids become table keys: NUL or invalid UTF-8 is a 400 here, not PostgreSQL's 500.
	api := requireToken(o.Token, httpserver.RefuseBadText(checkActor(mux)))
	if o.Metrics == nil {
		return api
	}
	open := http.NewServeMux()
	open.Handle("GET /metrics", o.Metrics)
	open.Handle("/", api)
	return open
}

type api struct{ Options }

// requireToken lets through requests bearing token. Both sides are hashed before the
// constant-time comparison, so neither the token's bytes nor its length leak through timing.
func requireToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got))) // "Bearer  t", as the public side reads it
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
