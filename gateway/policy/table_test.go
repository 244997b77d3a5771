package policy

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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
		tab := NewTable(db, func() time.Time { return now })
		for _, r := range []TenantRule{
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
		want := []TenantRule{
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

// TestFollowTableOnEvent shows a row written to the table taking effect on the NATS event,
// long before the periodic refresh would pick it up.
func TestFollowTableOnEvent(t *testing.T) {
	db := testkit.OpenDBs(t, "gateway")[0]
	ctx, cancel := context.WithCancel(context.Background())
	if err := db.Migrate(ctx, Migrations()); err != nil {
		t.Fatal(err)
	}
	ns := testkit.StartNATS(t)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	live := newLive(t, base)
	tab := NewTable(db, nil)
	done := make(chan error, 1)
	go func() { done <- FollowTable(ctx, tab, live, nc, time.Hour, live.log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("FollowTable() = %v, want nil", err)
		}
	})

	if err := tab.Put(ctx, TenantRule{Tenant: "ten_a", Route: "*", Capacity: 9, RefillPerSecond: 3}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "the override applies after ratelimit.rules.changed", func() bool {
		// The subscription starts asynchronously; publish until it has been heard.
		_ = nc.Publish(RulesChangedSubject, nil)
		r, ok := live.Current().TenantOverride("ten_a", "holds")
		return ok && r.Burst == 9
	})
}
