package auth

import (
	"context"
	"testing"
	"time"

	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

func TestSeedDemo(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, db *sqldb.DB) {
		ctx := context.Background()
		cfg := DefaultConfig() // the real bcrypt cost: the hash is part of what must be fast
		svc, err := NewService(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.RotateKeys(ctx, false); err != nil {
			t.Fatal(err)
		}

		start := time.Now()
		seeded, err := svc.SeedDemo(ctx)
		elapsed := time.Since(start)
		if err != nil || !seeded {
			t.Fatalf("SeedDemo() = %v, %v, want seeded", seeded, err)
		}
		t.Logf("SeedDemo on %s took %v", db.Dialect, elapsed)
		if db.Dialect == sqldb.SQLite && elapsed > time.Second && !raceEnabled {
			t.Errorf("SeedDemo on SQLite took %v, want well under a second", elapsed)
		}

		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM users`).Scan(&n); err != nil || n != DemoUsers {
			t.Errorf("users after SeedDemo = %d, %v, want %d", n, err, DemoUsers)
		}
		for _, i := range []int{1, DemoUsers} {
			if _, err := svc.Login(ctx, DemoEmail(i), DemoPassword); err != nil {
				t.Errorf("Login(%s, demo password) = %v, want a session", DemoEmail(i), err)
			}
		}
		if _, err := svc.Login(ctx, DemoEmail(DemoUsers+1), DemoPassword); err == nil {
			t.Errorf("Login(%s) succeeded, want no such demo fan", DemoEmail(DemoUsers+1))
		}
		for _, dt := range DemoTenants {
			ten, err := svc.ResolveAPIKey(ctx, DemoAPIKey(cfg.DemoSecret, dt.Name))
			if err != nil || ten.Name != dt.Name || ten.Plan != dt.Plan {
				t.Errorf("ResolveAPIKey(demo key of %s) = %+v, %v, want plan %s", dt.Name, ten, err, dt.Plan)
			}
		}
		if _, err := svc.ResolveAPIKey(ctx, DemoAPIKey("another secret", "ticketsrus")); err == nil {
			t.Errorf("a key derived from another secret resolved, want NotFound")
		}

		if again, err := svc.SeedDemo(ctx); err != nil || again {
			t.Errorf("second SeedDemo() = %v, %v, want nothing done", again, err)
		}
	})
}

func TestSeedDemoSkipsWhenUsersExist(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, db *sqldb.DB) {
		ctx := context.Background()
		svc := newTestService(t, s, testkit.NewClock(storeT0, 0))
		addUser(t, s, "usr_1", "ana@example.org")
		if seeded, err := svc.SeedDemo(ctx); err != nil || seeded {
			t.Errorf("SeedDemo() with a user = %v, %v, want nothing done", seeded, err)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM tenants`).Scan(&n); err != nil || n != 0 {
			t.Errorf("tenants = %d, %v, want 0", n, err)
		}
	})
}
