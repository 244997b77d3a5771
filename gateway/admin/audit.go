package admin

import (
	"context"
	"net/http"
	"strconv"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/platform/problem"
)

// Audit is the trail of policy changes; *policystore.Table is one, and *policystore.Store
// one whose database may be down. A change to the tables and its record are written in one
// transaction (InTx), so the trail holds every change made and none refused.
type Audit interface {
	InTx(ctx context.Context, fn func(*policystore.Table) error) error
	ListChanges(ctx context.Context, q policystore.ChangeQuery) (policystore.ChangePage, error)
}

var (
	_ Audit = (*policystore.Table)(nil)
	_ Audit = (*policystore.Store)(nil)
)

// ActorHeader names the admin caller in the audit trail: a caller holding the token may say
// who it is ("playground/r3"), recorded as "admin:playground/r3". It is a label, not a
// credential: whoever holds the one admin token may write any name, so it tells tools apart,
// not people.
const ActorHeader = "Admin-Actor"

// tables are what a change writes: the edits and the tenant overrides.
type tables interface {
	Edits
	Tenants
}

var _ tables = (*policystore.Table)(nil)

// plainTables are the tables of an admin API without an audit trail.
type plainTables struct {
	Edits
	Tenants
}

// commit runs write on the tables and records the change it returns (nil: nothing changed)
// in the same transaction, then forgets the record named forget ("" = none). Without an
// audit trail, write runs on the tables alone and nothing is recorded. It returns the
// change as recorded.
func (a *api) commit(ctx context.Context, forget string, write func(tables) (*policy.Change, error)) (*policy.Change, error) {
	if a.Audit == nil {
		return write(plainTables{a.Edits, a.Tenants})
	}
	var recorded *policy.Change
	err := a.Audit.InTx(ctx, func(t *policystore.Table) error {
		recorded = nil // a transaction run again starts afresh
		c, err := write(t)
		if err != nil {
			return err
		}
		if forget != "" {
			if err := t.DeleteChange(ctx, forget); err != nil {
				return err
			}
		}
		if c == nil {
			return nil
		}
		rec, err := t.RecordChange(ctx, *c)
		recorded = &rec
		return err
	})
	return recorded, err
}

// change is the record of a change r makes to the element kind and id, from before to after
// (nil: it does not exist).
func (a *api) change(r *http.Request, kind policy.ChangeKind, id, action string, before, after any) *policy.Change {
	actor := "admin"
	if name := r.Header.Get(ActorHeader); name != "" {
		actor += ":" + name
	}
	return &policy.Change{Actor: actor, Replica: a.Replica, Kind: kind, ID: id, Action: action,
		Before: policy.JSONOf(before), After: policy.JSONOf(after)}
}

// checkActor refuses a change whose Admin-Actor header could not be recorded as it is,
// before anything is changed.
func checkActor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := r.Header[ActorHeader]; ok && (len(name) != 1 || !policy.ValidActor("admin:"+name[0])) {
			problem.Write(w, r, nil, problem.InvalidField(ActorHeader, "want one name of 1 to 122 letters, digits or . _ : / -"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// auditParams are the query parameters of GET /admin/audit.
var auditParams = map[string]bool{"kind": true, "id": true, "actor": true, "action": true, "limit": true, "cursor": true}

// listAudit answers GET /admin/audit: the recorded changes, newest first, a page at a time
// ({"changes": [...], "next_cursor": "…"}), filtered by kind, id, actor (and the names under
// it) and action. A parameter it does not know is refused, naming it, rather than ignored:
// a misspelt filter would otherwise answer the whole trail.
func (a *api) listAudit(w http.ResponseWriter, r *http.Request) {
	if a.Audit == nil {
		problem.Write(w, r, nil, problem.New(problem.NotFound, "no audit trail: the gateway keeps no policy database"))
		return
	}
	v := r.URL.Query()
	for name, vs := range v {
		if !auditParams[name] {
			problem.Write(w, r, nil, problem.InvalidField(name, "not a parameter of GET /admin/audit: want kind, id, actor, action, limit or cursor"))
			return
		}
		if len(vs) > 1 {
			problem.Write(w, r, nil, problem.InvalidField(name, "given %d times: want it once", len(vs)))
			return
		}
	}
	q := policystore.ChangeQuery{Kind: policy.ChangeKind(v.Get("kind")), ID: v.Get("id"), Actor: v.Get("actor"), Action: v.Get("action"), Cursor: v.Get("cursor")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			problem.Write(w, r, nil, problem.InvalidField("limit", "want an integer from 1 to %d", policystore.MaxChangesPage))
			return
		}
		q.Limit = n
	}
	page, err := a.Audit.ListChanges(r.Context(), q)
	if err != nil {
		problem.Write(w, r, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
