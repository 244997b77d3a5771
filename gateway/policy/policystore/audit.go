package policystore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/sqldb/keyset"
)

// The page sizes of ListChanges: what a request that names none gets, and the most it may ask.
const (
	DefaultChangesPage = 50
	MaxChangesPage     = 500
)

// ChangeQuery selects the audit trail's rows ListChanges returns; a field left empty selects
// every row. Limit (0 = DefaultChangesPage) and Cursor ("" = the newest) page it.
type ChangeQuery struct {
	Kind   policy.ChangeKind
	ID     string
	Action string
	// Actor selects the rows whose actor is Actor, or starts with Actor and a slash
	// ("admin:playground" selects "admin:playground/r3" too).
	Actor  string
	Limit  int
	Cursor string
}

// ChangePage is one page of the audit trail, newest first; Next is the cursor of the
// following page, "" on the last.
type ChangePage struct {
	Changes []policy.Change `json:"changes"`
	Next    string          `json:"next_cursor,omitempty"`
}

// changesNewestFirst is the list ListChanges pages through.
var changesNewestFirst = keyset.List[policy.Change]{
	Select:  `SELECT id, at_us, actor, replica, kind, element, action, before_json, after_json FROM policy_change`,
	Order:   keyset.Order{Key: "at_us", Desc: true},
	Default: DefaultChangesPage,
	Max:     MaxChangesPage,
	Scan:    scanChange,
	Cursor:  func(c policy.Change) keyset.Cursor { return keyset.Cursor{Key: c.At.UnixMicro(), ID: c.ChangeID} },
}

// RecordChange writes c to the audit trail, stamped with a new ChangeID and the store's
// clock, and returns it as written. Call it on the Table of InTx that makes the change, so
// that no change goes unrecorded and no record outlives a change rolled back.
func (t *Table) RecordChange(ctx context.Context, c policy.Change) (policy.Change, error) {
	if !c.Kind.Valid() || c.Actor == "" || c.Action == "" {
		return policy.Change{}, fmt.Errorf("record policy_change: kind %q, actor %q, action %q: want all three", c.Kind, c.Actor, c.Action)
	}
	c.ChangeID = ids.New("chg_")
	c.At = t.now().UTC().Truncate(time.Microsecond)
	_, err := t.q.ExecContext(ctx, t.db.Rebind(`INSERT INTO policy_change (id, at_us, actor, replica, kind, element, action, before_json, after_json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		c.ChangeID, c.At.UnixMicro(), c.Actor, c.Replica, string(c.Kind), c.ID, c.Action, nullJSON(c.Before), nullJSON(c.After))
	if err != nil {
		return policy.Change{}, fmt.Errorf("record policy_change %s %q: %w", c.Kind, c.ID, err)
	}
	return c, nil
}

// DeleteChange removes the record of a change that was undone before it took effect: the
// admin API stored an edit, then its own replica refused it (see admin's edit).
func (t *Table) DeleteChange(ctx context.Context, changeID string) error {
	if _, err := t.q.ExecContext(ctx, t.db.Rebind(`DELETE FROM policy_change WHERE id = ?`), changeID); err != nil {
		return fmt.Errorf("delete policy_change %q: %w", changeID, err)
	}
	return nil
}

// ListChanges returns the changes q selects, newest first, one page of them. A bad kind,
// actor, limit or cursor is an Invalid problem naming it.
func (t *Table) ListChanges(ctx context.Context, q ChangeQuery) (ChangePage, error) {
	if err := q.check(); err != nil {
		return ChangePage{}, err
	}
	var where []string
	var args []any
	for _, f := range []struct{ col, v string }{{"kind", string(q.Kind)}, {"element", q.ID}, {"action", q.Action}} {
		if f.v != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.v)
		}
	}
	if q.Actor != "" {
		prefix := q.Actor + "/"
		where = append(where, "(actor = ? OR substr(actor, 1, ?) = ?)")
		args = append(args, q.Actor, len(prefix), prefix)
	}
	changes, next, err := changesNewestFirst.Page(ctx, t.db, q.Limit, q.Cursor, strings.Join(where, " AND "), args...)
	if err != nil {
		return ChangePage{}, fmt.Errorf("list policy_change: %w", err)
	}
	return ChangePage{Changes: changes, Next: next}, nil
}

// check refuses a filter that could match nothing for a reason the caller should hear: a
// kind that does not exist, an actor no one can be. Each problem names the query parameter.
func (q ChangeQuery) check() error {
	if q.Kind != "" && !q.Kind.Valid() {
		return problem.InvalidField("kind", "%q is not a kind of change: want one of %v", q.Kind, policy.ChangeKinds)
	}
	if q.Actor != "" && !policy.ValidActor(q.Actor) {
		return problem.InvalidField("actor", "want 1 to 128 letters, digits or . _ : / -")
	}
	for _, f := range []struct{ name, v string }{{"id", q.ID}, {"action", q.Action}} {
		if err := problem.CheckText(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func scanChange(r sqldb.Scanner) (policy.Change, error) {
	var c policy.Change
	var at int64
	var before, after sql.Null[string]
	err := r.Scan(&c.ChangeID, &at, &c.Actor, &c.Replica, &c.Kind, &c.ID, &c.Action, &before, &after)
	c.At = time.UnixMicro(at).UTC()
	c.Before, c.After = rawJSON(before), rawJSON(after)
	return c, err
}

// nullJSON stores JSON null, or nothing, as SQL NULL.
func nullJSON(v json.RawMessage) sql.Null[string] {
	if len(v) == 0 || string(v) == "null" {
		return sql.Null[string]{}
	}
	return sql.Null[string]{V: string(v), Valid: true}
}

func rawJSON(v sql.Null[string]) json.RawMessage {
	if !v.Valid {
		return json.RawMessage("null")
	}
	return json.RawMessage(v.V)
}
