package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// forEachStore runs fn against a migrated Store on SQLite and, when configured, PostgreSQL.
func forEachStore(t *testing.T, fn func(t *testing.T, s *Store, db *sqldb.DB)) {
	t.Helper()
	testkit.ForEachDB(t, "auth", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if err := db.Migrate(ctx, Migrations()); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		if err := outbox.EnsureTable(ctx, db); err != nil {
			t.Fatalf("outbox table: %v", err)
		}
		fn(t, &Store{DB: db}, db)
	})
}

// wantCode fails unless err is a problem with code.
func wantCode(t *testing.T, call string, err error, code problem.Code) {
	t.Helper()
	if got := problem.CodeOf(err); err == nil || got != code {
		t.Fatalf("%s error = %v (%s), want code %s", call, err, got, code)
	}
}

var storeT0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func addUser(t *testing.T, s *Store, id, email string) User {
	t.Helper()
	u := User{ID: id, Email: email, Name: "Fan " + id, CreatedAt: storeT0}
	if err := s.CreateUser(context.Background(), u, "$2a$10$hash-of-"+id, nil); err != nil {
		t.Fatalf("CreateUser(%s): %v", id, err)
	}
	return u
}

func TestStoreUsers(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, db *sqldb.DB) {
		ctx := context.Background()
		if any, err := s.HasUsers(ctx); err != nil || any {
			t.Fatalf("HasUsers() on an empty store = %v, %v, want false", any, err)
		}
		ev := &outbox.Event{ID: "evt_1", Subject: "boxoffice.auth.user.registered", Payload: []byte(`{}`)}
		u := User{ID: "usr_1", Email: "ana@example.org", Name: "Ana", CreatedAt: storeT0}
		if err := s.CreateUser(ctx, u, "$2a$10$x", ev); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		got, hash, err := s.UserByEmail(ctx, "ana@example.org")
		if err != nil || got != u || hash != "$2a$10$x" {
			t.Errorf("UserByEmail() = %+v, %q, %v, want %+v", got, hash, err, u)
		}
		if got, err := s.UserByID(ctx, "usr_1"); err != nil || got != u {
			t.Errorf("UserByID() = %+v, %v, want %+v", got, err, u)
		}
		if any, err := s.HasUsers(ctx); err != nil || !any {
			t.Errorf("HasUsers() = %v, %v, want true", any, err)
		}

		dup := User{ID: "usr_2", Email: "ana@example.org", Name: "Other", CreatedAt: storeT0}
		err = s.CreateUser(ctx, dup, "h", &outbox.Event{ID: "evt_2", Subject: "boxoffice.auth.user.registered"})
		wantCode(t, "CreateUser(same email)", err, problem.Conflict)
		if p, _ := errors.AsType[*problem.Error](err); p.Field != "email" {
			t.Errorf("CreateUser(same email) field = %q, want email", p.Field)
		}
		var events int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM outbox`).Scan(&events); err != nil || events != 1 {
			t.Errorf("outbox rows = %d, %v, want 1: the refused sign-up must not leave its event", events, err)
		}

		_, _, err = s.UserByEmail(ctx, "nobody@example.org")
		wantCode(t, "UserByEmail(unknown)", err, problem.NotFound)
		_, err = s.UserByID(ctx, "usr_404")
		wantCode(t, "UserByID(unknown)", err, problem.NotFound)
	})
}

func refreshAt(hash string, issued time.Time) RefreshToken {
	return RefreshToken{Hash: hash, IssuedAt: issued, ExpiresAt: issued.Add(time.Hour)}
}

// startSession stores a user usr_1 and the first token h1 of its family fam_1, issued at
// storeT0 and valid for an hour.
func startSession(t *testing.T, s *Store) {
	t.Helper()
	addUser(t, s, "usr_1", "a@example.org")
	first := refreshAt("h1", storeT0)
	first.FamilyID, first.UserID = "fam_1", "usr_1"
	if err := s.StartSession(context.Background(), first); err != nil {
		t.Fatalf("StartSession: %v", err)
	}
}

func TestStoreRefreshRotation(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		startSession(t, s)

		now := storeT0.Add(time.Minute)
		second, err := s.RotateRefresh(ctx, "h1", refreshAt("h2", now), now)
		if err != nil {
			t.Fatalf("RotateRefresh(h1): %v", err)
		}
		if second.FamilyID != "fam_1" || second.UserID != "usr_1" {
			t.Errorf("RotateRefresh(h1) = %+v, want family fam_1 of usr_1", second)
		}
		if old, _ := s.RefreshByHash(ctx, "h1"); !old.UsedAt.Equal(now) {
			t.Errorf("h1 used at %v, want %v", old.UsedAt, now)
		}

		// h1 again: reuse. The call fails and the family, h2 included, is revoked.
		later := now.Add(time.Minute)
		_, err = s.RotateRefresh(ctx, "h1", refreshAt("h3", later), later)
		if !errors.Is(err, errRefreshReused) {
			t.Fatalf("RotateRefresh(h1 again) = %v, want %v", err, errRefreshReused)
		}
		cur, err := s.RefreshByHash(ctx, "h2")
		if err != nil || !cur.FamilyRevoked.Equal(later) || cur.RevokedBecause != revokedForReuse {
			t.Errorf("h2 after reuse = %+v, %v, want its family revoked at %v for reuse", cur, err, later)
		}
		_, err = s.RotateRefresh(ctx, "h2", refreshAt("h4", later), later)
		if !errors.Is(err, errRefreshRevoked) {
			t.Errorf("RotateRefresh(h2 after reuse) = %v, want %v", err, errRefreshRevoked)
		}
		if _, err := s.RefreshByHash(ctx, "h3"); !errors.Is(err, errRefreshInvalid) {
			t.Errorf("h3 was stored by a failed rotation: %v", err)
		}
	})
}

func TestStoreRefreshRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		startSession(t, s)
		tests := []struct {
			name string
			hash string
			at   time.Time
			want error
		}{
			{"unknown token", "nope", storeT0, errRefreshInvalid},
			{"expired token", "h1", storeT0.Add(time.Hour), errRefreshInvalid},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := s.RotateRefresh(ctx, tt.hash, refreshAt("x-"+tt.name, tt.at), tt.at)
				if !errors.Is(err, tt.want) {
					t.Errorf("RotateRefresh(%s) = %v, want %v", tt.hash, err, tt.want)
				}
			})
		}
		if cur, _ := s.RefreshByHash(ctx, "h1"); !cur.FamilyRevoked.IsZero() || !cur.UsedAt.IsZero() {
			t.Errorf("h1 after refusals = %+v, want unspent and not revoked: an expired token revokes nothing", cur)
		}
	})
}

// TestStoreRefreshConcurrentUse presents one token from many goroutines at once: exactly
// one call may succeed, and the rest must be treated as reuse.
func TestStoreRefreshConcurrentUse(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		startSession(t, s)
		const callers = 8
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() {
				now := storeT0.Add(time.Second)
				_, errs[i] = s.RotateRefresh(ctx, "h1", refreshAt(fmt.Sprintf("next-%d", i), now), now)
			})
		}
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, errRefreshReused), errors.Is(err, errRefreshRevoked):
			default:
				t.Errorf("caller %d: %v, want success or a reuse refusal", i, err)
			}
		}
		if ok != 1 {
			t.Errorf("%d of %d concurrent refreshes with one token succeeded, want exactly 1", ok, callers)
		}
		if cur, _ := s.RefreshByHash(ctx, "h1"); cur.FamilyRevoked.IsZero() {
			t.Errorf("family not revoked after concurrent reuse")
		}
	})
}

func TestStorePruneRefresh(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, db *sqldb.DB) {
		ctx := context.Background()
		addUser(t, s, "usr_1", "a@example.org")
		for i, issued := range []time.Time{storeT0, storeT0.Add(2 * time.Hour)} {
			tok := refreshAt(fmt.Sprintf("h%d", i), issued)
			tok.FamilyID, tok.UserID = fmt.Sprintf("fam_%d", i), "usr_1"
			if err := s.StartSession(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.PruneRefresh(ctx, storeT0.Add(90*time.Minute))
		if err != nil || n != 1 {
			t.Fatalf("PruneRefresh() = %d, %v, want 1", n, err)
		}
		if _, err := s.RefreshByHash(ctx, "h0"); !errors.Is(err, errRefreshInvalid) {
			t.Errorf("h0 survived pruning: %v", err)
		}
		if _, err := s.RefreshByHash(ctx, "h1"); err != nil {
			t.Errorf("h1 pruned before its expiry: %v", err)
		}
		var families int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM refresh_families`).Scan(&families); err != nil || families != 1 {
			t.Errorf("families after prune = %d, %v, want 1", families, err)
		}
	})
}

func TestStoreTenants(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		ten := Tenant{ID: "ten_1", Name: "ticketsrus", Plan: PlanPartner, CreatedAt: storeT0}
		if err := s.CreateTenant(ctx, ten, HashSecret("bo_live_a")); err != nil {
			t.Fatalf("CreateTenant: %v", err)
		}
		if got, err := s.TenantByKeyHash(ctx, HashSecret("bo_live_a")); err != nil || got != ten {
			t.Errorf("TenantByKeyHash() = %+v, %v, want %+v", got, err, ten)
		}
		_, err := s.TenantByKeyHash(ctx, HashSecret("bo_live_b"))
		wantCode(t, "TenantByKeyHash(unknown)", err, problem.NotFound)

		err = s.CreateTenant(ctx, Tenant{ID: "ten_2", Name: "ticketsrus", Plan: PlanFree, CreatedAt: storeT0}, HashSecret("bo_live_c"))
		wantCode(t, "CreateTenant(same name)", err, problem.Conflict)
		_, err = s.TenantByKeyHash(ctx, HashSecret("bo_live_c"))
		wantCode(t, "TenantByKeyHash(key of the refused tenant)", err, problem.NotFound)
	})
}

func TestStoreSigningKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, s *Store, _ *sqldb.DB) {
		ctx := context.Background()
		k1 := keyAt(1, storeT0, storeT0)
		k2 := keyAt(2, storeT0.Add(time.Hour), storeT0.Add(2*time.Hour+123*time.Millisecond))
		for _, k := range []SigningKey{k2, k1} {
			if added, err := s.AddSigningKey(ctx, k); err != nil || !added {
				t.Fatalf("AddSigningKey(%s) = %v, %v, want added", k.ID, added, err)
			}
		}
		rival := keyAt(2, storeT0, storeT0)
		rival.ID = "k2-rival"
		if added, err := s.AddSigningKey(ctx, rival); err != nil || added {
			t.Errorf("AddSigningKey(second generation 2) = %v, %v, want not added", added, err)
		}
		keys, err := s.SigningKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := kids(keys); got != "k1,k2" {
			t.Fatalf("SigningKeys() = %s, want k1,k2", got)
		}
		for i, want := range []SigningKey{k1, k2} {
			got := keys[i]
			if !bytes.Equal(got.Private, want.Private) || !got.ActivatesAt.Equal(want.ActivatesAt) || !got.CreatedAt.Equal(want.CreatedAt) {
				t.Errorf("SigningKeys()[%d] = %+v, want %+v", i, got, want)
			}
		}
		if err := s.DeleteSigningKeys(ctx, []string{"k1"}); err != nil {
			t.Fatal(err)
		}
		if keys, _ := s.SigningKeys(ctx); kids(keys) != "k2" {
			t.Errorf("after deleting k1 SigningKeys() = %s, want k2", kids(keys))
		}
	})
}
