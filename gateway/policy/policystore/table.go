package policystore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/sqldb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the gateway's schema: the rate_limit_rule, policy_edit and policy_change
// tables.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations") // a constant path: never fails
	return sub
}

// RulesChangedSubject is the NATS subject that tells every gateway replica to reload the
// rate_limit_rule table now rather than at its next periodic refresh. The payload is ignored.
// See also PolicyChangedSubject, for the admin edits.
const RulesChangedSubject = "ratelimit.rules.changed"

// PolicyChangedSubject is the NATS subject that tells every gateway replica to reload the
// admin edits (the policy_edit table) now rather than at its next periodic refresh. The
// payload is ignored. A replica reloads the edits and the tenant overrides together on either
// subject; the two names say which table changed to whoever reads the traffic.
const PolicyChangedSubject = "gateway.policy.changed"

// Table reads and writes the gateway's tables: rate_limit_rule, the per-tenant overrides
// (Load, Put, Delete), and policy_edit, the admin edits (LoadEdits, PutEdit, …). Safe for
// concurrent use.
type Table struct {
	db  *sqldb.DB
	q   querier // db, or the transaction of InTx
	now func() time.Time
}

// querier is what a Table reads and writes through: *sql.DB or *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// NewTable returns the tables in db, migrated by Migrations; c stamps updated_at and the
// audit trail's rows.
func NewTable(db *sqldb.DB, c clock.Clock) *Table {
	return &Table{db: db, q: db.DB, now: c.Now}
}

// InTx runs fn on the tables in one transaction (sqldb.DB.InTx: committed when fn returns
// nil, run again on a transient conflict), so that a change and its record in the audit
// trail (RecordChange) commit together or not at all.
func (t *Table) InTx(ctx context.Context, fn func(*Table) error) error {
	return t.db.InTx(ctx, func(tx *sql.Tx) error { return fn(&Table{db: t.db, q: tx, now: t.now}) })
}

// Load returns every row, ordered by tenant and route.
func (t *Table) Load(ctx context.Context) ([]policy.TenantRule, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT tenant, route, capacity, refill_per_second, updated_at FROM rate_limit_rule ORDER BY tenant, route`)
	if err != nil {
		return nil, fmt.Errorf("load rate_limit_rule: %w", err)
	}
	defer rows.Close()
	var out []policy.TenantRule
	for rows.Next() {
		var r policy.TenantRule
		var ms int64
		if err := rows.Scan(&r.Tenant, &r.Route, &r.Capacity, &r.RefillPerSecond, &ms); err != nil {
			return nil, fmt.Errorf("load rate_limit_rule: %w", err)
		}
		r.UpdatedAt = time.UnixMilli(ms).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load rate_limit_rule: %w", err)
	}
	return out, nil
}

// Put inserts the row or replaces the one with its tenant and route, stamping updated_at.
// Replicas see it at their next reload; publish RulesChangedSubject to make that now.
func (t *Table) Put(ctx context.Context, r policy.TenantRule) error {
	if r.Route == "" {
		r.Route = policy.AllRoutes
	}
	_, err := t.q.ExecContext(ctx, t.db.Rebind(`INSERT INTO rate_limit_rule (tenant, route, capacity, refill_per_second, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant, route) DO UPDATE SET capacity = excluded.capacity,
			refill_per_second = excluded.refill_per_second, updated_at = excluded.updated_at`),
		r.Tenant, r.Route, r.Capacity, r.RefillPerSecond, t.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("put rate_limit_rule: %w", err)
	}
	return nil
}

// Delete removes the row of tenant and route, if any.
func (t *Table) Delete(ctx context.Context, tenant, route string) error {
	if _, err := t.q.ExecContext(ctx, t.db.Rebind(`DELETE FROM rate_limit_rule WHERE tenant = ? AND route = ?`), tenant, route); err != nil {
		return fmt.Errorf("delete rate_limit_rule: %w", err)
	}
	return nil
}

// Reload reads both tables into live once: the admin edits, then the tenant overrides. A
// table that cannot be read keeps what live holds from it, and its error is returned; a
// change live refuses is logged by live and not returned, since reading again will not help.
func (t *Table) Reload(ctx context.Context, live *policy.Live) error {
	err := policy.SyncEdits(ctx, t.LoadEdits, live)
	if errors.Is(err, policy.ErrEditsRefused) {
		err = nil // logged by live; reading again will not help
	}
	rules, rerr := t.Load(ctx)
	if rerr == nil {
		_ = live.ReplaceTenants(rules)
	}
	return errors.Join(err, rerr)
}
