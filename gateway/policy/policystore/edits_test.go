package policystore

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

func newEditTable(t *testing.T, db *sqldb.DB, now func() time.Time) *Table {
	t.Helper()
	if err := db.Migrate(context.Background(), Migrations()); err != nil {
		t.Fatal(err)
	}
	return NewTable(db, clock.Func(now))
}

func TestEditTable(t *testing.T) {
	testkit.ForEachDB(t, "gateway", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000).UTC()
		tab := newEditTable(t, db, func() time.Time { return now })
		shadow := policy.Limit{ID: "holds-per-account", Key: "user", Rate: "2/1m", Mode: "shadow"}
		for _, e := range []policy.Edit{
			policy.ServiceEdit(policy.Service{Name: "inventory", Instances: []string{"http://127.0.0.1:9"}, MaxInFlight: 5}),
			policy.LimitEdit(policy.Limit{ID: "holds-per-account", Key: "user", Rate: "3/1m"}),
			policy.LimitDeletion("login-per-ip"),
			policy.LimitEdit(shadow), // replaces the row of the same limit
		} {
			if err := tab.PutEdit(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		got, err := tab.LoadEdits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []policy.Edit{policy.LimitEdit(shadow), policy.LimitDeletion("login-per-ip"),
			policy.ServiceEdit(policy.Service{Name: "inventory", Instances: []string{"http://127.0.0.1:9"}, MaxInFlight: 5})}
		for i := range want {
			want[i].UpdatedAt = now
		}
		if jsonOf(t, got) != jsonOf(t, want) {
			t.Errorf("LoadEdits() = %s, want %s", jsonOf(t, got), jsonOf(t, want))
		}

		if err := tab.DeleteEdit(ctx, policy.EditLimit, "login-per-ip"); err != nil {
			t.Fatal(err)
		}
		if got, _ := tab.LoadEdits(ctx); len(got) != 2 || slices.ContainsFunc(got, func(e policy.Edit) bool { return e.ID == "login-per-ip" }) {
			t.Errorf("after DeleteEdit(limit, login-per-ip), LoadEdits() = %s, want the two other rows", jsonOf(t, got))
		}
		if err := tab.PutEdit(ctx, policy.Edit{Kind: policy.EditRoute, ID: "holds", Deleted: true}); err == nil {
			t.Errorf("PutEdit(deleted route) = nil, want the table to refuse a deletion that is not a limit's")
		}
		if err := tab.ResetEdits(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := tab.LoadEdits(ctx); len(got) != 0 || err != nil {
			t.Errorf("after ResetEdits, LoadEdits() = %s, %v; want none", jsonOf(t, got), err)
		}
	})
}

// TestReplaceEditsFromTheTable makes edits one by one on one Live, storing each, and shows a
// second Live that reads them back from the table running the same policy.
func TestReplaceEditsFromTheTable(t *testing.T) {
	testkit.ForEachDB(t, "gateway", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		tab := newEditTable(t, db, nil)
		one := newLive(t)
		for _, e := range []policy.Edit{
			policy.LimitEdit(policy.Limit{ID: "holds-per-account", Key: "user", Rate: "2/1m", Mode: "shadow"}),
			policy.ServiceEdit(policy.Service{Name: "payment", Instances: []string{"http://127.0.0.1:9"}}),
			policy.LimitEdit(policy.Limit{ID: "pay-per-user", Key: "user", Rate: "1/s"}),
			policy.RouteEdit(policy.Route{ID: "pay", Match: policy.Match{Method: "POST", Path: "/v1/pay"}, Service: "payment", Auth: policy.AuthUser, Limits: []string{"pay-per-user", "login-per-ip"}}),
			policy.LimitDeletion("login-per-ip"),
		} {
			if err := one.Apply(e); err != nil {
				t.Fatalf("Apply(%s %s) = %v", e.Kind, e.ID, err)
			}
			if err := tab.PutEdit(ctx, e); err != nil {
				t.Fatal(err)
			}
		}

		other := newLive(t)
		var swaps int
		other.OnChange(func(*policy.Snapshot) error { swaps++; return nil })
		rows, err := tab.LoadEdits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.ReplaceEdits(rows); err != nil {
			t.Fatalf("ReplaceEdits(table) = %v, want nil", err)
		}
		if got, want := jsonOf(t, other.Current().Policy), jsonOf(t, one.Current().Policy); got != want {
			t.Errorf("policy from the table = %s\nwant, as edited one by one, %s", got, want)
		}
		if got, want := jsonOf(t, other.Edits()), jsonOf(t, one.Edits()); got != want {
			t.Errorf("Edits() from the table = %s, want %s", got, want)
		}
		if r := other.Current().Route("pay"); r == nil || len(r.Limits) != 1 {
			t.Errorf("route pay = %+v, want it with pay-per-user alone (login-per-ip deleted)", r)
		}
		// The periodic reload finds the same rows: nothing to swap.
		if err := other.ReplaceEdits(rows); err != nil || swaps != 1 {
			t.Errorf("ReplaceEdits(same rows) = %v after %d swaps, want nil after 1", err, swaps)
		}
		if err := other.ReplaceEdits(nil); err != nil {
			t.Fatalf("ReplaceEdits(nil) = %v, want nil", err)
		}
		if got, want := jsonOf(t, other.Current().Policy), jsonOf(t, newLive(t).Current().Policy); got != want {
			t.Errorf("after ReplaceEdits(nil), policy = %s, want the file's %s", got, want)
		}
	})
}

// TestPatchRowsInTheTable stores a patch and reads it back, and reads a row the gateway
// wrote before patches were kept as patches, in a table migrated since, as a whole element.
func TestPatchRowsInTheTable(t *testing.T) {
	testkit.ForEachDB(t, "gateway", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		before := fstest.MapFS{}
		for _, name := range []string{"001_rate_limit_rule.sql", "002_policy_edit.sql"} {
			b, err := fs.ReadFile(Migrations(), name)
			if err != nil {
				t.Fatal(err)
			}
			before[name] = &fstest.MapFile{Data: b}
		}
		if err := db.Migrate(ctx, before); err != nil {
			t.Fatal(err)
		}
		old := `{"id":"holds-per-account","key":"user","rate":"2/1m"}`
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO policy_edit (kind, id, body, deleted, updated_at) VALUES (?, ?, ?, ?, ?)`),
			"limit", "holds-per-account", old, false, 1); err != nil {
			t.Fatal(err)
		}
		tab := newEditTable(t, db, nil)
		patch := policy.PatchEdit(policy.EditRoute, "holds", json.RawMessage(`{"response_timeout":"2s"}`))
		if err := tab.PutEdit(ctx, patch); err != nil {
			t.Fatal(err)
		}
		if err := tab.PutEdit(ctx, policy.Edit{Kind: policy.EditLimit, ID: "login-per-ip", Patch: true, Deleted: true}); err == nil {
			t.Errorf("PutEdit(deleted patch) = nil, want it refused")
		}
		rows, err := tab.LoadEdits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].Patch || string(rows[0].Value) != old || !rows[1].Patch || string(rows[1].Value) != string(patch.Value) {
			t.Fatalf("LoadEdits() = %s, want the old row whole and the patch", jsonOf(t, rows))
		}
		l := newLive(t)
		if err := l.ReplaceEdits(rows); err != nil {
			t.Fatal(err)
		}
		s := l.Current()
		if lim, r := s.Limit("holds-per-account"), s.Route("holds"); lim.Rule.Limit != 2 || r.ResponseTimeout.Seconds() != 2 || r.Service != "inventory" {
			t.Errorf("from the table, limit %d, route %+v; want 2/1m and the file's route with a 2s timeout", lim.Rule.Limit, r.Route)
		}
	})
}

// newLive is a Live on the policy package's test policy, as a replica starts from its file.
func newLive(t *testing.T) *policy.Live {
	t.Helper()
	data, err := os.ReadFile("../testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	l, err := policy.NewLive(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// jsonOf is v as JSON, for comparing policies and edits whole.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
