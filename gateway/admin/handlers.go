package admin

import (
	"encoding/json"
	"net/http"
	"slices"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/upstream"
	"boxoffice.dev/platform/problem"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// getPolicy answers the whole running policy, defaults applied, with the last rejected
// change if the latest one was refused.
func (a *api) getPolicy(w http.ResponseWriter, r *http.Request) {
	s := a.Live.Current()
	body := struct {
		Policy   *policy.Policy      `json:"policy"`
		Tenants  []policy.TenantRule `json:"tenant_limits"`
		Rejected string              `json:"last_rejected,omitempty"`
	}{Policy: s.Policy, Tenants: s.Tenants}
	if err := a.Live.Rejected(); err != nil {
		body.Rejected = err.Error()
	}
	writeJSON(w, http.StatusOK, body)
}

func (a *api) listLimits(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"limits": a.Live.Current().Policy.Limits})
}

func (a *api) getLimit(w http.ResponseWriter, r *http.Request) {
	l := a.Live.Current().Limit(r.PathValue("id"))
	if l == nil {
		problem.Write(w, r, nil, problem.New(problem.NotFound, "no limit %q", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, l.Limit)
}

// putLimit answers PUT (the whole limit) and, with merge, PATCH (the fields sent, over the
// limit as it runs: {"mode":"shadow"} flips one rule to shadow).
func (a *api) putLimit(merge bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var l policy.Limit
		if merge {
			cur := a.Live.Current().Limit(id)
			if cur == nil {
				problem.Write(w, r, nil, problem.New(problem.NotFound, "no limit %q", id))
				return
			}
			l = cur.Limit
		}
		if err := problem.DecodeJSON(r, &l); err != nil {
			problem.Write(w, r, a.Log, err)
			return
		}
		if l.ID != "" && l.ID != id {
			problem.Write(w, r, nil, problem.InvalidField("id", "%q differs from the path's %q", l.ID, id))
			return
		}
		l.ID = id
		if err := a.Live.PutLimit(l); err != nil {
			a.fail(w, r, err)
			return
		}
		a.changed(r, "limit", id)
		writeJSON(w, http.StatusOK, a.Live.Current().Limit(id).Limit)
	}
}

func (a *api) deleteLimit(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ok, err := a.Live.DeleteLimit(id)
	switch {
	case err != nil:
		a.fail(w, r, err)
	case !ok:
		problem.Write(w, r, nil, problem.New(problem.NotFound, "no limit %q", id))
	default:
		a.changed(r, "limit", id)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (a *api) listRoutes(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"routes": a.Live.Current().Policy.Routes})
}

func (a *api) getRoute(w http.ResponseWriter, r *http.Request) {
	rt := a.Live.Current().Route(r.PathValue("id"))
	if rt == nil {
		problem.Write(w, r, nil, problem.New(problem.NotFound, "no route %q", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, rt.Route)
}

// putRoute changes a route: its limits, auth, timeouts and retry, or adds one.
func (a *api) putRoute(merge bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var rt policy.Route
		if merge {
			cur := a.Live.Current().Route(id)
			if cur == nil {
				problem.Write(w, r, nil, problem.New(problem.NotFound, "no route %q", id))
				return
			}
			rt = cur.Route
			rt.Limits = slices.Clone(rt.Limits)
		}
		if err := problem.DecodeJSON(r, &rt); err != nil {
			problem.Write(w, r, a.Log, err)
			return
		}
		if rt.ID != "" && rt.ID != id {
			problem.Write(w, r, nil, problem.InvalidField("id", "%q differs from the path's %q", rt.ID, id))
			return
		}
		rt.ID = id
		if err := a.Live.PutRoute(rt); err != nil {
			a.fail(w, r, err)
			return
		}
		a.changed(r, "route", id)
		writeJSON(w, http.StatusOK, a.Live.Current().Route(id).Route)
	}
}

func (a *api) listServices(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"services": a.Live.Current().Policy.Services})
}

// putService changes a service's upstream knobs: instances, max_in_flight, probe, ejection.
func (a *api) putService(merge bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		var sv policy.Service
		if merge {
			i := slices.IndexFunc(a.Live.Current().Policy.Services, func(s policy.Service) bool { return s.Name == name })
			if i < 0 {
				problem.Write(w, r, nil, problem.New(problem.NotFound, "no service %q", name))
				return
			}
			sv = a.Live.Current().Policy.Services[i]
			sv.Instances = slices.Clone(sv.Instances)
		}
		if err := problem.DecodeJSON(r, &sv); err != nil {
			problem.Write(w, r, a.Log, err)
			return
		}
		if sv.Name != "" && sv.Name != name {
			problem.Write(w, r, nil, problem.InvalidField("name", "%q differs from the path's %q", sv.Name, name))
			return
		}
		sv.Name = name
		if err := a.Live.PutService(sv); err != nil {
			a.fail(w, r, err)
			return
		}
		a.changed(r, "service", name)
		writeJSON(w, http.StatusOK, sv)
	}
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
	if err := problem.DecodeJSON(r, &body); err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	rule := policy.TenantRule{Tenant: r.PathValue("tenant"), Route: r.PathValue("route"), Capacity: body.Capacity, RefillPerSecond: body.RefillPerSecond}
	switch {
	case rule.Capacity < 1:
		problem.Write(w, r, nil, problem.InvalidField("capacity", "%d: want 1 or more", rule.Capacity))
		return
	case !(rule.RefillPerSecond > 0) || rule.RefillPerSecond > 1e6:
		problem.Write(w, r, nil, problem.InvalidField("refill_per_second", "%g: want more than 0, at most 1e6", rule.RefillPerSecond))
		return
	case rule.Route != policy.AllRoutes && a.Live.Current().Route(rule.Route) == nil:
		problem.Write(w, r, nil, problem.InvalidField("route", "%q is not a route of the policy, nor *", rule.Route))
		return
	}
	if err := a.Tenants.Put(r.Context(), rule); err != nil {
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
	if err := a.Tenants.Delete(r.Context(), tenant, route); err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	a.tenantsChanged(w, r, tenant+"/"+route, http.StatusNoContent, nil)
}

// tenantsChanged reloads the table into this replica at once and announces the change.
func (a *api) tenantsChanged(w http.ResponseWriter, r *http.Request, id string, status int, body any) {
	rules, err := a.Tenants.Load(r.Context())
	if err == nil {
		err = a.Live.ReplaceTenants(rules)
	}
	if err == nil && a.Announce != nil {
		err = a.Announce(r.Context())
	}
	if err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	a.changed(r, "tenant-limit", id)
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}
