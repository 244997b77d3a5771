package admin

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// getPolicy answers the whole running policy, defaults applied, with the stored edits this
// replica could not apply and the last rejected change if the latest one was refused.
func (a *api) getPolicy(w http.ResponseWriter, r *http.Request) {
	s := a.Live.Current()
	body := struct {
		Policy   *policy.Policy      `json:"policy"`
		Tenants  []policy.TenantRule `json:"tenant_limits"`
		Skipped  []string            `json:"skipped_edits,omitempty"`
		Rejected string              `json:"last_rejected,omitempty"`
	}{Policy: s.Policy, Tenants: s.Tenants, Skipped: a.Live.SkippedEdits()}
	if err := a.Live.Rejected(); err != nil {
		body.Rejected = err.Error()
	}
	writeJSON(w, http.StatusOK, body)
}

// element is one kind of policy element the admin API edits by id: limits, routes,
// services. One set of handlers serves all three.
type element[T any] struct {
	what string
	// list returns every element of the running policy; find the one with id.
	list func(s *policy.Snapshot) []T
	find func(s *policy.Snapshot, id string) (T, bool)
	// id is the element's own id field.
	id func(v *T) *string
	// edit is the change that puts the element, adding it or replacing the one with its id.
	edit func(v T) policy.Edit
	// kind is the kind of its edits.
	kind policy.EditKind
}

var (
	limits = element[policy.Limit]{
		what: "limit",
		list: func(s *policy.Snapshot) []policy.Limit { return s.Policy.Limits },
		find: func(s *policy.Snapshot, id string) (policy.Limit, bool) {
			if l := s.Limit(id); l != nil {
				return l.Limit, true
			}
			return policy.Limit{}, false
		},
		id:   func(v *policy.Limit) *string { return &v.ID },
		edit: policy.LimitEdit,
		kind: policy.EditLimit,
	}
	routes = element[policy.Route]{
		what: "route",
		list: func(s *policy.Snapshot) []policy.Route { return s.Policy.Routes },
		find: func(s *policy.Snapshot, id string) (policy.Route, bool) {
			if r := s.Route(id); r != nil {
				return r.Route, true
			}
			return policy.Route{}, false
		},
		id:   func(v *policy.Route) *string { return &v.ID },
		edit: policy.RouteEdit,
		kind: policy.EditRoute,
	}
	services = element[policy.Service]{
		what: "service",
		list: func(s *policy.Snapshot) []policy.Service { return s.Policy.Services },
		find: func(s *policy.Snapshot, name string) (policy.Service, bool) {
			i := slices.IndexFunc(s.Policy.Services, func(sv policy.Service) bool { return sv.Name == name })
			if i < 0 {
				return policy.Service{}, false
			}
			return s.Policy.Services[i], true
		},
		id:   func(v *policy.Service) *string { return &v.Name },
		edit: policy.ServiceEdit,
		kind: policy.EditService,
	}
)

// listHandler answers {"<what>s": [...]}.
func (e element[T]) listHandler(a *api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{e.what + "s": e.list(a.Live.Current())})
	}
}

func (e element[T]) getHandler(a *api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := e.find(a.Live.Current(), r.PathValue("id"))
		if !ok {
			a.notFound(w, r, e.kind, r.PathValue("id"))
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// notFound answers 404 for the element of kind and id, saying so when an edit deleted it: the
// deletion holds whatever the policy file says, until that edit is dropped.
func (a *api) notFound(w http.ResponseWriter, r *http.Request, kind policy.EditKind, id string) {
	if slices.ContainsFunc(a.Live.Edits(), func(e policy.Edit) bool { return e.Kind == kind && e.ID == id && e.Deleted }) {
		problem.Write(w, r, nil, problem.New(problem.NotFound,
			"no %s %q: an admin edit deleted it, whatever the policy file says; DELETE /admin/edits/%s/%s drops that edit, PUT /admin/%ss/%s defines it again",
			kind, id, kind, id, kind, id))
		return
	}
	problem.Write(w, r, nil, problem.New(problem.NotFound, "no %s %q", kind, id))
}

// putHandler answers PUT (the whole element) and, with merge, PATCH (the fields sent:
// {"mode":"shadow"} flips one limit to shadow). A PATCH is kept as the fields it sent, set
// over the policy file's element each time the policy is composed, so that the file still
// governs the others; over an element an edit put whole, it patches that. The answer is the
// element as it now runs, defaults applied.
func (e element[T]) putHandler(a *api, merge bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var v T
		var body bytes.Buffer
		if merge {
			cur, ok := e.find(a.Live.Current(), id)
			if !ok {
				a.notFound(w, r, e.kind, id)
				return
			}
			// A deep copy: decoding into the running element's slices would write into them.
			b, _ := json.Marshal(cur)
			_ = json.Unmarshal(b, &v)
			// Decoded over the element as it runs, the body's fields are checked as PUT
			// checks them; the body itself, read whole by DecodeJSON, is the patch.
			r.Body = io.NopCloser(io.TeeReader(r.Body, &body))
		}
		if err := httpapi.DecodeJSON(r, &v); err != nil {
			problem.Write(w, r, a.Log, err)
			return
		}
		field := e.id(&v)
		if *field != "" && *field != id {
			problem.Write(w, r, nil, problem.InvalidField("id", "%q differs from the path's %q", *field, id))
			return
		}
		*field = id
		change := e.edit(v)
		if merge {
			if !bytes.HasPrefix(bytes.TrimSpace(body.Bytes()), []byte("{")) {
				problem.Write(w, r, nil, problem.New(problem.Invalid, "a PATCH body is a JSON object of the fields to change"))
				return
			}
			var err error
			if change, err = a.Live.Merge(policy.PatchEdit(e.kind, id, body.Bytes())); err != nil {
				a.fail(w, r, err)
				return
			}
		}
		action := policy.ActionPut
		if merge {
			action = policy.ActionPatch
		}
		if err := a.edit(r, change, action); err != nil {
			a.fail(w, r, err)
			return
		}
		a.changed(r, e.what, id)
		v, _ = e.find(a.Live.Current(), id)
		writeJSON(w, http.StatusOK, v)
	}
}

// deleteLimit takes the limit off the policy and off every route that lists it.
func (a *api) deleteLimit(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if a.Live.Current().Limit(id) == nil {
		a.notFound(w, r, policy.EditLimit, id)
		return
	}
	if err := a.edit(r, policy.LimitDeletion(id), policy.ActionDelete); err != nil {
		a.fail(w, r, err)
		return
	}
	a.changed(r, "limit", id)
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) listUpstreams(w http.ResponseWriter, r *http.Request) {
	services := []upstream.ServiceStatus{}
	if a.Upstreams != nil {
		services = a.Upstreams.Snapshot()
	}
	writeJSON(w, http.StatusOK, map[string]any{"services": services})
}

func (a *api) listTenantLimits(w http.ResponseWriter, r *http.Request) {
	if a.Tenants == nil {
		problem.Write(w, r, nil, problem.New(problem.NotFound, "no rate_limit_rule table"))
		return
	}
	rules, err := a.Tenants.Load(r.Context())
	if err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tenant_limits": append([]policy.TenantRule{}, rules...)})
}

// putTenantLimit writes a rate_limit_rule row ({"capacity":…, "refill_per_second":…}),
// reloads the table here and announces the change to the other replicas.
func (a *api) putTenantLimit(w http.ResponseWriter, r *http.Request) {
	if a.Tenants == nil {
		problem.Write(w, r, nil, problem.New(problem.NotFound, "no rate_limit_rule table"))
		return
	}
	var body struct {
		Capacity        int     `json:"capacity"`
		RefillPerSecond float64 `json:"refill_per_second"`
	}
	if err := httpapi.DecodeJSON(r, &body); err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	rule := policy.TenantRule{Tenant: r.PathValue("tenant"), Route: r.PathValue("route"), Capacity: body.Capacity, RefillPerSecond: body.RefillPerSecond}
	// Checked as every replica will compile the row: a row they would all skip is refused.
	if err := a.Live.Current().CheckTenantRule(rule); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.writeTenantRule(r, rule.Tenant, rule.Route, &rule); err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	a.tenantsChanged(w, r, rule.Tenant+"/"+rule.Route, http.StatusOK, rule)
}

func (a *api) deleteTenantLimit(w http.ResponseWriter, r *http.Request) {
	if a.Tenants == nil {
		problem.Write(w, r, nil, problem.New(problem.NotFound, "no rate_limit_rule table"))
		return
	}
	tenant, route := r.PathValue("tenant"), r.PathValue("route")
	if err := a.writeTenantRule(r, tenant, route, nil); err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	a.tenantsChanged(w, r, tenant+"/"+route, http.StatusNoContent, nil)
}

// writeTenantRule puts rule as the override of tenant on route, or deletes that override
// when rule is nil, recording the row before and after. Deleting a row that is not there
// changes nothing and records nothing.
func (a *api) writeTenantRule(r *http.Request, tenant, route string, rule *policy.TenantRule) error {
	ctx := r.Context()
	_, err := a.commit(ctx, "", func(t tables) (*policy.Change, error) {
		rows, err := t.Load(ctx)
		if err != nil {
			return nil, err
		}
		var before *policy.TenantRule
		if i := slices.IndexFunc(rows, func(x policy.TenantRule) bool { return x.Tenant == tenant && x.Route == route }); i >= 0 {
			before = &rows[i]
		}
		action := policy.ActionPut
		if rule == nil {
			action = policy.ActionDelete
			err = t.Delete(ctx, tenant, route)
		} else {
			err = t.Put(ctx, *rule)
		}
		if err != nil || (rule == nil && before == nil) {
			return nil, err
		}
		return a.change(r, policy.ChangeTenantLimit, tenant+"/"+route, action, before, rule), nil
	})
	return err
}

// tenantsChanged reloads the table into this replica at once and announces the change.
func (a *api) tenantsChanged(w http.ResponseWriter, r *http.Request, id string, status int, body any) {
	rules, err := a.Tenants.Load(r.Context())
	if err == nil {
		err = a.Live.ReplaceTenants(rules)
	}
	if err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	a.announce(r.Context(), policystore.RulesChangedSubject)
	a.changed(r, "tenant-limit", id)
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}
