package auth

import (
	"context"
	"testing"

	"boxoffice.dev/platform/outbox"
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

		seeded, err := svc.SeedDemo(ctx)
		if err != nil || !seeded {
			t.Fatalf("SeedDemo() = %v, %v, want seeded", seeded, err)
		}
		// What keeps seeding fast (BenchmarkSeedDemo): one password hash for every demo fan,
		// not a bcrypt run each.
		var hashes int
		if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT password_hash) FROM users`).Scan(&hashes); err != nil || hashes != 1 {
			t.Errorf("distinct password hashes after SeedDemo = %d, %v, want 1", hashes, err)
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

// BenchmarkSeedDemo measures seeding the demo fans and tenants on SQLite, what `boxoffice up`
// does on a fresh data directory before it is ready (well under a second is the aim).
func BenchmarkSeedDemo(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		db, err := sqldb.Open(ctx, sqldb.Options{Service: "auth", DataDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Migrate(ctx, Migrations()); err != nil {
			b.Fatal(err)
		}
		if err := outbox.EnsureTable(ctx, db); err != nil {
			b.Fatal(err)
		}
		svc, err := NewService(&Store{DB: db}, DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.RotateKeys(ctx, false); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if seeded, err := svc.SeedDemo(ctx); err != nil || !seeded {
			b.Fatalf("SeedDemo() = %v, %v", seeded, err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
}
