package policystore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"boxoffice.dev/gateway/policy"
)

// LoadEdits returns every row of the policy_edit table, ordered by kind and id.
func (t *Table) LoadEdits(ctx context.Context) ([]policy.Edit, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT kind, id, body, patch, deleted, updated_at FROM policy_edit ORDER BY kind, id`)
	if err != nil {
		return nil, fmt.Errorf("load policy_edit: %w", err)
	}
	defer rows.Close()
	var out []policy.Edit
	for rows.Next() {
		var e policy.Edit
		var body sql.Null[string]
		var ms int64
		if err := rows.Scan(&e.Kind, &e.ID, &body, &e.Patch, &e.Deleted, &ms); err != nil {
			return nil, fmt.Errorf("load policy_edit: %w", err)
		}
		if body.Valid {
			e.Value = json.RawMessage(body.V)
		}
		e.UpdatedAt = time.UnixMilli(ms).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load policy_edit: %w", err)
	}
	return out, nil
}

// PutEdit inserts the row or replaces the one with its kind and id, stamping updated_at.
// The table checks the row's shape, not the edit: store the row Live.Merge makes of an edit,
// so that a patch keeps the fields earlier ones set, and validate it against the running
// policy first (Live.Check). Replicas see it at their next reload; publish
// PolicyChangedSubject to make that now.
func (t *Table) PutEdit(ctx context.Context, e policy.Edit) error {
	if e.Patch && e.Deleted {
		return fmt.Errorf("put policy_edit %s %q: a deletion is not a patch", e.Kind, e.ID)
	}
	body := sql.Null[string]{V: string(e.Value), Valid: !e.Deleted}
	_, err := t.q.ExecContext(ctx, t.db.Rebind(`INSERT INTO policy_edit (kind, id, body, patch, deleted, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body, patch = excluded.patch,
			deleted = excluded.deleted, updated_at = excluded.updated_at`),
		string(e.Kind), e.ID, body, e.Patch, e.Deleted, t.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("put policy_edit %s %q: %w", e.Kind, e.ID, err)
	}
	return nil
}

// DeleteEdit removes the row of kind and id, if any: that element is the file's again.
func (t *Table) DeleteEdit(ctx context.Context, kind policy.EditKind, id string) error {
	if _, err := t.q.ExecContext(ctx, t.db.Rebind(`DELETE FROM policy_edit WHERE kind = ? AND id = ?`), string(kind), id); err != nil {
		return fmt.Errorf("delete policy_edit %s %q: %w", kind, id, err)
	}
	return nil
}

// ResetEdits removes every row: the policy is the file's again.
func (t *Table) ResetEdits(ctx context.Context) error {
	if _, err := t.q.ExecContext(ctx, `DELETE FROM policy_edit`); err != nil {
		return fmt.Errorf("reset policy_edit: %w", err)
	}
	return nil
}
