package policystore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// TestAuditTrail records changes of every kind and reads them back newest first, a page at a
// time, filtered as an operator asks, on SQLite and PostgreSQL.
func TestAuditTrail(t *testing.T) {
	testkit.ForEachDB(t, "gateway", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000).UTC()
		tab := newEditTable(t, db, func() time.Time { now = now.Add(time.Millisecond); return now })
		limit := policy.Limit{ID: "holds-per-account", Key: "user", Rate: "3/1m"}
		changes := []policy.Change{
			{Actor: "admin", Kind: policy.ChangeLimit, ID: limit.ID, Action: policy.ActionPut, After: policy.JSONOf(limit)},
			{Actor: "admin:playground/r1", Kind: policy.ChangeLimit, ID: limit.ID, Action: policy.ActionPatch, Before: policy.JSONOf(limit), After: policy.JSONOf(policy.Limit{ID: limit.ID, Key: "user", Rate: "9/1m"})},
			{Actor: "admin:playground", Kind: policy.ChangeTenantLimit, ID: "ten_a/*", Action: policy.ActionPut, After: []byte(`{"capacity":5}`)},
			{Actor: "admin:playgrounds", Kind: policy.ChangeRoute, ID: "holds", Action: policy.ActionPatch, Before: []byte(`{}`), After: []byte(`{}`)},
			{Actor: "file:/etc/policy.yaml", Replica: "gw-2", Kind: policy.ChangeFileReload, ID: "/etc/policy.yaml", Action: policy.ActionReload, Before: []byte(`{}`), After: []byte(`{}`)},
			{Actor: "admin", Kind: policy.ChangeLimit, ID: limit.ID, Action: policy.ActionDelete, Before: policy.JSONOf(limit), After: policy.JSONOf(nil)},
		}
		var ids []string
		for _, c := range changes {
			got, err := tab.RecordChange(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, got.ChangeID)
		}
		all, err := tab.ListChanges(ctx, ChangeQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Changes) != len(changes) || all.Next != "" {
			t.Fatalf("ListChanges() = %d changes, next %q; want %d and no next page", len(all.Changes), all.Next, len(changes))
		}
		for i, c := range all.Changes {
			want := changes[len(changes)-1-i]
			if c.ChangeID != ids[len(ids)-1-i] || c.Actor != want.Actor || c.Kind != want.Kind || c.Action != want.Action {
				t.Errorf("ListChanges()[%d] = %+v, want the %s %s by %s: newest first", i, c, want.Action, want.ID, want.Actor)
			}
		}
		if first, last := all.Changes[len(all.Changes)-1], all.Changes[0]; string(first.Before) != "null" || string(first.After) != string(policy.JSONOf(limit)) ||
			string(last.After) != "null" || !last.At.After(first.At) {
			t.Errorf("the put's before, after = %s, %s and the delete's after = %s; want null, the limit, null, the delete later", first.Before, first.After, last.After)
		}

		// Pages of two, each after the last, make the whole list.
		var paged []string
		cursor := ""
		for range len(changes) {
			page, err := tab.ListChanges(ctx, ChangeQuery{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range page.Changes {
				paged = append(paged, c.ChangeID)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if got, want := strings.Join(paged, ","), strings.Join(newestFirstOf(ids), ","); got != want {
			t.Errorf("paged by 2 = %s, want %s", got, want)
		}

		for name, tc := range map[string]struct {
			q    ChangeQuery
			want []int // indexes into changes, newest first
		}{
			"one limit":                 {ChangeQuery{Kind: policy.ChangeLimit, ID: limit.ID}, []int{5, 1, 0}},
			"one action":                {ChangeQuery{Kind: policy.ChangeLimit, Action: policy.ActionPatch}, []int{1}},
			"an actor and its children": {ChangeQuery{Actor: "admin:playground"}, []int{2, 1}},
			"one run":                   {ChangeQuery{Actor: "admin:playground/r1"}, []int{1}},
			"file reloads":              {ChangeQuery{Kind: policy.ChangeFileReload}, []int{4}},
			"nothing":                   {ChangeQuery{Kind: policy.ChangeService}, nil},
		} {
			page, err := tab.ListChanges(ctx, tc.q)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var want, got []string
			for _, i := range tc.want {
				want = append(want, ids[i])
			}
			for _, c := range page.Changes {
				got = append(got, c.ChangeID)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: ListChanges(%+v) = %v, want %v", name, tc.q, got, want)
			}
		}

		for field, q := range map[string]ChangeQuery{
			"kind":   {Kind: "limits"},
			"actor":  {Actor: "admin%"},
			"id":     {ID: "a\x00b"},
			"limit":  {Limit: MaxChangesPage + 1},
			"cursor": {Cursor: "not-a-cursor"},
		} {
			_, err := tab.ListChanges(ctx, q)
			if p, ok := errors.AsType[*problem.Error](err); !ok || p.Code != problem.Invalid || !strings.Contains(p.Error(), field) {
				t.Errorf("ListChanges(%+v) = %v, want an Invalid problem naming %s", q, err, field)
			}
		}
	})
}

// A change and its record commit together: a transaction that fails after both leaves
// neither.
func TestChangeAndRecordCommitTogether(t *testing.T) {
	testkit.ForEachDB(t, "gateway", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		tab := newEditTable(t, db, nil)
		edit := policy.LimitEdit(policy.Limit{ID: "holds-per-account", Key: "user", Rate: "3/1m"})
		change := policy.Change{Actor: "admin", Kind: policy.ChangeLimit, ID: edit.ID, Action: policy.ActionPut, After: edit.Value}
		failed := errors.New("refused after the write")
		err := tab.InTx(ctx, func(tx *Table) error {
			if err := tx.PutEdit(ctx, edit); err != nil {
				return err
			}
			if _, err := tx.RecordChange(ctx, change); err != nil {
				return err
			}
			return failed
		})
		if !errors.Is(err, failed) {
			t.Fatalf("InTx() = %v, want %v", err, failed)
		}
		edits, _ := tab.LoadEdits(ctx)
		page, _ := tab.ListChanges(ctx, ChangeQuery{})
		if len(edits) != 0 || len(page.Changes) != 0 {
			t.Errorf("after a rolled back transaction: %d edits, %d changes; want none of either", len(edits), len(page.Changes))
		}

		var recorded policy.Change
		if err := tab.InTx(ctx, func(tx *Table) error {
			if err := tx.PutEdit(ctx, edit); err != nil {
				return err
			}
			recorded, err = tx.RecordChange(ctx, change)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		page, _ = tab.ListChanges(ctx, ChangeQuery{})
		if len(page.Changes) != 1 || page.Changes[0].ChangeID != recorded.ChangeID {
			t.Fatalf("after a committed transaction, changes = %+v, want the one recorded", page.Changes)
		}
		if err := tab.DeleteChange(ctx, recorded.ChangeID); err != nil {
			t.Fatal(err)
		}
		if page, _ = tab.ListChanges(ctx, ChangeQuery{}); len(page.Changes) != 0 {
			t.Errorf("after DeleteChange, changes = %+v, want none", page.Changes)
		}
		if _, err := tab.RecordChange(ctx, policy.Change{Kind: "limits", Actor: "admin", Action: policy.ActionPut}); err == nil {
			t.Errorf("RecordChange(kind limits) = nil, want it refused")
		}
	})
}

// newestFirstOf is ids, recorded oldest first, in the order the trail lists them.
func newestFirstOf(ids []string) []string {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}
