package admin

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/policy/policystore"
	"boxoffice.dev/platform/problem"
)

// edit makes one change for every replica. It is checked against the running policy first,
// so a rejected edit never reaches the table, nor the audit trail; then stored with its
// record (the element before and after); then applied here, so the answer shows it; then
// announced. If this replica refuses it after all (an OnChange hook, or a change in
// between), the row it replaced is put back and the record dropped: no replica should apply
// what the one that took it refused, and the trail holds changes made.
func (a *api) edit(r *http.Request, e policy.Edit, action string) error {
	ctx := r.Context()
	next, err := a.Live.Preview(e)
	if err != nil {
		return err
	}
	if a.Edits == nil {
		return a.Live.Apply(e)
	}
	c := a.change(r, policy.ChangeKind(e.Kind), e.ID, action, a.Live.Current().Element(e.Kind, e.ID), next.Element(e.Kind, e.ID))
	held := a.Live.Edits()
	i := slices.IndexFunc(held, func(h policy.Edit) bool { return h.Kind == e.Kind && h.ID == e.ID })
	recorded, err := a.commit(ctx, "", func(t tables) (*policy.Change, error) { return c, t.PutEdit(ctx, e) })
	if err != nil {
		return err
	}
	if err := a.Live.Apply(e); err != nil {
		forget := ""
		if recorded != nil {
			forget = recorded.ChangeID
		}
		_, back := a.commit(ctx, forget, func(t tables) (*policy.Change, error) {
			if i >= 0 {
				return nil, t.PutEdit(ctx, held[i])
			}
			return nil, t.DeleteEdit(ctx, e.Kind, e.ID)
		})
		return errors.Join(err, back)
	}
	a.announce(ctx, policystore.PolicyChangedSubject)
	return nil
}

// announce tells the other replicas to reload now. A failure is logged, not answered: the
// change is stored and applied here, and the others read it at their next refresh.
func (a *api) announce(ctx context.Context, subject string) {
	if a.Announce == nil {
		return
	}
	if err := a.Announce(ctx, subject); err != nil {
		a.Log.WarnContext(ctx, "admin: announcing a change failed; the other replicas see it at their next refresh", "subject", subject, "error", err)
	}
}

// listEdits answers the stored edits, {"edits": [...]}, with when each was written; without
// a store, the edits this replica holds.
func (a *api) listEdits(w http.ResponseWriter, r *http.Request) {
	edits := a.Live.Edits()
	if a.Edits != nil {
		var err error
		if edits, err = a.Edits.LoadEdits(r.Context()); err != nil {
			problem.Write(w, r, a.Log, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"edits": append([]policy.Edit{}, edits...)})
}

// deleteEdit drops the edit of one limit, route or service, on every replica: that element is
// the file's again (or gone, if only the edit made it). Dropping an edit that is not there
// changes nothing, and records nothing, so a client undoing its own change can always call it.
func (a *api) deleteEdit(w http.ResponseWriter, r *http.Request) {
	kind, id := policy.EditKind(r.PathValue("kind")), r.PathValue("id")
	if !slices.Contains([]policy.EditKind{policy.EditLimit, policy.EditRoute, policy.EditService}, kind) {
		problem.Write(w, r, a.Log, problem.InvalidField("kind", "%q is not a kind of edit: want limit, route or service", kind))
		return
	}
	drop := func(e policy.Edit) bool { return e.Kind == kind && e.ID == id }
	a.dropEdits(w, r, string(kind)+"/"+id, drop, func(ctx context.Context, t tables) (*policy.Change, error) {
		rows, err := t.LoadEdits(ctx)
		if err != nil || !slices.ContainsFunc(rows, drop) {
			return nil, err
		}
		next, err := a.Live.PreviewDrop(drop)
		if err != nil {
			return nil, err
		}
		c := a.change(r, policy.ChangeKind(kind), id, policy.ActionDropEdit, a.Live.Current().Element(kind, id), next.Element(kind, id))
		return c, t.DeleteEdit(ctx, kind, id)
	})
}

// resetEdits drops every edit, on every replica: the policy is the file's again. The record
// holds the edits dropped as before, and nothing as after.
func (a *api) resetEdits(w http.ResponseWriter, r *http.Request) {
	a.dropEdits(w, r, "*", func(policy.Edit) bool { return true }, func(ctx context.Context, t tables) (*policy.Change, error) {
		rows, err := t.LoadEdits(ctx)
		if err != nil || len(rows) == 0 {
			return nil, err
		}
		return a.change(r, policy.ChangeReset, "*", policy.ActionReset, rows, nil), t.ResetEdits(ctx)
	})
}

// dropEdits takes the edits drop selects off the table (with unstore, which returns its
// record) and off this replica, and tells the others to reload. With a store, this replica
// then holds exactly the table's edits, whatever another replica wrote in between
// (policy.SyncEdits).
func (a *api) dropEdits(w http.ResponseWriter, r *http.Request, what string, drop func(policy.Edit) bool, unstore func(context.Context, tables) (*policy.Change, error)) {
	var err error
	if a.Edits == nil {
		err = a.Live.DropEdits(drop)
	} else if _, err = a.commit(r.Context(), "", func(t tables) (*policy.Change, error) { return unstore(r.Context(), t) }); err == nil {
		a.Live.EditsStored() // a reload that read the table before this drop must not undo it
		err = policy.SyncEdits(r.Context(), a.Edits.LoadEdits, a.Live)
		if errors.Is(err, policy.ErrEditsBusy) {
			err = nil // stored and announced below: this replica's own reload applies it
		}
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if a.Edits != nil {
		a.announce(r.Context(), policystore.PolicyChangedSubject)
	}
	a.changed(r, "edits", what)
	w.WriteHeader(http.StatusNoContent)
}
