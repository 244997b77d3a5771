package policystore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// A store whose database does not answer refuses every call with a 503, and waits for it.
func TestStoreWithTheDatabaseDown(t *testing.T) {
	dead := fmt.Sprintf("postgres://postgres:postgres@127.0.0.1:%d/gateway?sslmode=disable", testkit.FreePort(t))
	s := New(sqldb.Options{URL: dead, Service: "gateway"}, nil)
	ctx := context.Background()
	if _, err := s.Open(ctx); err == nil {
		t.Fatalf("Open(%s) = nil, want an error: nothing listens there", dead)
	}
	calls := map[string]error{
		"Load":       second(s.Load(ctx)),
		"LoadEdits":  second(s.LoadEdits(ctx)),
		"Put":        s.Put(ctx, policy.TenantRule{Tenant: "ten_a", Capacity: 1, RefillPerSecond: 1}),
		"Delete":     s.Delete(ctx, "ten_a", policy.AllRoutes),
		"PutEdit":    s.PutEdit(ctx, policy.LimitDeletion("l")),
		"DeleteEdit": s.DeleteEdit(ctx, policy.EditLimit, "l"),
		"ResetEdits": s.ResetEdits(ctx),
	}
	for name, err := range calls {
		if !isUnavailable(err) {
			t.Errorf("%s before the database answers = %v, want a problem.Unavailable", name, err)
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if tab, err := s.Await(waitCtx, 50*time.Millisecond); tab != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Await(database down) = %v, %v; want nil and the context's deadline", tab, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() of a store never opened = %v, want nil", err)
	}
}

// A store that opens its database migrates it and serves the tables through it.
func TestStoreOpened(t *testing.T) {
	s := New(sqldb.Options{Service: "gateway", DataDir: t.TempDir()}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tab, err := s.Await(ctx, 10*time.Millisecond)
	if err != nil || tab == nil {
		t.Fatalf("Await(SQLite) = %v, %v; want the tables", tab, err)
	}
	if again, err := s.Open(ctx); again != tab || err != nil {
		t.Errorf("Open after Await = %p, %v; want the same tables %p", again, err, tab)
	}
	want := policy.TenantRule{Tenant: "ten_a", Route: "search", Capacity: 5, RefillPerSecond: 1}
	if err := s.Put(ctx, want); err != nil {
		t.Fatalf("Put = %v, want nil", err)
	}
	got, err := s.Load(ctx)
	if err != nil || len(got) != 1 || got[0].Tenant != want.Tenant || got[0].Capacity != want.Capacity {
		t.Errorf("Load = %+v, %v; want the rule put", got, err)
	}
	// A database that fails is the caller's to try again (503), not a fault of the gateway's.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx); !isUnavailable(err) {
		t.Errorf("Load on a closed database = %v, want a problem.Unavailable", err)
	}
}

func isUnavailable(err error) bool {
	p, ok := errors.AsType[*problem.Error](err)
	return ok && p.Code == problem.Unavailable
}

func second[T any](_ T, err error) error { return err }
