package auth

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The demo data SeedDemo stores: fans to log in as, and tenants whose API keys come from
// DEMO_SECRET (see DemoAPIKey), so `boxoffice up` can print every credential.
const (
	DemoUsers    = 2000
	DemoPassword = "boxoffice-demo"
)

// DemoTenantID is the id of the demo tenant named name: what the gateway keys a tenant's
// limits by, and what its admin API's tenant overrides name.
func DemoTenantID(name string) string { return "ten_demo_" + name }

// DemoTenants are the demo's tenants: two partners for the scenarios' API traffic, and an
// internal one that may call the admin API through the gateway.
var DemoTenants = []struct {
	Name string
	Plan Plan
}{
	{"ticketsrus", PlanPartner},
	{"freebie", PlanFree},
	{"backstage", PlanInternal},
}

// DemoEmail is the email of demo fan i (1-based): fan0001@boxoffice.test and so on.
func DemoEmail(i int) string { return fmt.Sprintf("fan%04d@boxoffice.test", i) }

// demoBatch is how many users one INSERT carries: 5 parameters each stays far below
// SQLite's and PostgreSQL's parameter limits.
const demoBatch = 250

// SeedDemo stores the demo accounts and tenants when there are no users yet, and reports
// whether it did; several instances may run it at once (inserts skip existing rows, demo
// tenants have fixed ids). All demo accounts share one bcrypt hash, salt included, made once:
// hashing 2,000 would take minutes, and each login still runs the real comparison. Never do
// this with real accounts: one cracked hash would open them all.
func (s *Service) SeedDemo(ctx context.Context) (bool, error) {
	if any, err := s.Store.HasUsers(ctx); err != nil || any {
		return false, err
	}
	hash, err := s.passwords.Hash(DemoPassword)
	if err != nil {
		return false, fmt.Errorf("seed demo: %w", err)
	}
	now := s.Clock.Now().UTC()
	users := make([]User, DemoUsers)
	for i := range users {
		users[i] = User{ID: s.IDs.New("usr_"), Email: DemoEmail(i + 1), Name: fmt.Sprintf("Fan %04d", i+1), CreatedAt: now}
	}
	err = s.Store.DB.InTx(ctx, func(tx *sql.Tx) error {
		for start := 0; start < len(users); start += demoBatch {
			if err := s.Store.insertUsers(ctx, tx, users[start:min(start+demoBatch, len(users))], hash); err != nil {
				return err
			}
		}
		for _, t := range DemoTenants {
			ten := Tenant{ID: DemoTenantID(t.Name), Name: t.Name, Plan: t.Plan, CreatedAt: now}
			if _, err := s.Store.insertTenant(ctx, tx, ten, HashSecret(DemoAPIKey(s.Config.DemoSecret, t.Name))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("seed demo: %w", err)
	}
	return true, nil
}

// insertUsers adds users sharing one password hash in a single statement, skipping emails
// that exist.
func (s *Store) insertUsers(ctx context.Context, tx *sql.Tx, users []User, passwordHash string) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO users (id, email, name, password_hash, created_at) VALUES `)
	args := make([]any, 0, 5*len(users))
	for i, u := range users {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, u.ID, u.Email, u.Name, passwordHash, millis(u.CreatedAt))
	}
	q.WriteString(` ON CONFLICT (email) DO NOTHING`)
	if _, err := tx.ExecContext(ctx, s.DB.Rebind(q.String()), args...); err != nil {
		return fmt.Errorf("insert users: %w", err)
	}
	return nil
}
