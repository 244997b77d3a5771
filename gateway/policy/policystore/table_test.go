package policystore

import (
	"context"
	"testing"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

func TestTable(t *testing.T) {
	testkit.ForEachDB(t, "gateway", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if err := db.Migrate(ctx, Migrations()); err != nil {
			t.Fatal(err)
		}
		now := time.UnixMilli(1_700_000_000_000).UTC()
		tab := NewTable(db, clock.Func(func() time.Time { return now }))
		for _, r := range []policy.TenantRule{
			{Tenant: "ten_b", Capacity: 5, RefillPerSecond: 1},
			{Tenant: "ten_a", Route: "holds", Capacity: 3, RefillPerSecond: 0.5},
			{Tenant: "ten_a", Route: "holds", Capacity: 4, RefillPerSecond: 2}, // replaces the row above
		} {
			if err := tab.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		got, err := tab.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []policy.TenantRule{
			{Tenant: "ten_a", Route: "holds", Capacity: 4, RefillPerSecond: 2, UpdatedAt: now},
			{Tenant: "ten_b", Route: "*", Capacity: 5, RefillPerSecond: 1, UpdatedAt: now},
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("Load() = %+v, want %+v", got, want)
		}
		if err := tab.Delete(ctx, "ten_b", "*"); err != nil {
			t.Fatal(err)
		}
		if got, _ := tab.Load(ctx); len(got) != 1 {
			t.Errorf("after Delete, Load() = %+v, want one row", got)
		}
	})
}
