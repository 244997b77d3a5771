package policy

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"boxoffice.dev/platform/sqldb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the gateway's schema: the rate_limit_rule and policy_edit tables.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations") // a constant path: never fails
	return sub
}

// RulesChangedSubject is the NATS subject that tells every gateway replica to reload the
// rate_limit_rule table now rather than at its next periodic refresh. The payload is ignored.
// See also PolicyChangedSubject, for the admin edits.
const RulesChangedSubject = "ratelimit.rules.changed"

// DefaultTableRefresh is how often the tables are reloaded without an event: the bound on how
// stale a replica that missed an event can be.
const DefaultTableRefresh = 30 * time.Second

// Table reads and writes the gateway's tables: rate_limit_rule, the per-tenant overrides
// (Load, Put, Delete), and policy_edit, the admin edits (LoadEdits, PutEdit, …). Safe for
// concurrent use.
type Table struct {
	db  *sqldb.DB
	now func() time.Time
}

// NewTable returns the tables in db, migrated by Migrations; now (nil = time.Now) stamps
// updated_at.
func NewTable(db *sqldb.DB, now func() time.Time) *Table {
	if now == nil {
		now = time.Now
	}
	return &Table{db: db, now: now}
}

// Load returns every row, ordered by tenant and route.
func (t *Table) Load(ctx context.Context) ([]TenantRule, error) {
	rows, err := t.db.QueryContext(ctx, `SELECT tenant, route, capacity, refill_per_second, updated_at FROM rate_limit_rule ORDER BY tenant, route`)
	if err != nil {
		return nil, fmt.Errorf("load rate_limit_rule: %w", err)
	}
	defer rows.Close()
	var out []TenantRule
	for rows.Next() {
		var r TenantRule
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
func (t *Table) Put(ctx context.Context, r TenantRule) error {
	if r.Route == "" {
		r.Route = AllRoutes
	}
	_, err := t.db.ExecContext(ctx, t.db.Rebind(`INSERT INTO rate_limit_rule (tenant, route, capacity, refill_per_second, updated_at)
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
	if _, err := t.db.ExecContext(ctx, t.db.Rebind(`DELETE FROM rate_limit_rule WHERE tenant = ? AND route = ?`), tenant, route); err != nil {
		return fmt.Errorf("delete rate_limit_rule: %w", err)
	}
	return nil
}

// Reload reads both tables into live once: the admin edits, then the tenant overrides. A
// table that cannot be read keeps what live holds from it, and its error is returned; a
// change live refuses is logged by live and not returned, since reading again will not help.
func (t *Table) Reload(ctx context.Context, live *Live) error {
	err := SyncEdits(ctx, t.LoadEdits, live)
	if errors.Is(err, ErrEditsRefused) {
		err = nil // logged by live; reading again will not help
	}
	rules, rerr := t.Load(ctx)
	if rerr == nil {
		_ = live.ReplaceTenants(rules)
	}
	return errors.Join(err, rerr)
}

// ErrEditsRefused wraps the error of SyncEdits when live refused the edits it read: the
// table was read, and reading it again will not help.
var ErrEditsRefused = errors.New("stored edits refused")

// ErrEditsBusy is SyncEdits's error when the edits kept changing on this replica while it
// read the table: live keeps what it holds, and the next reload reads again.
var ErrEditsBusy = errors.New("admin edits kept changing while the table was read")

// syncEditsReads bounds how often SyncEdits reads the table while edits keep changing on this
// replica: each change is announced, and the reload it brings reads the table again.
const syncEditsReads = 3

// SyncEdits makes live's admin edits the stored ones, read with load (a Table's LoadEdits).
// A change this replica makes while the table is being read is not undone: the rows read
// may predate it, so they are read again (see Live.ReplaceEditsAt), at most syncEditsReads
// times, after which live keeps what it holds and ErrEditsBusy says so.
func SyncEdits(ctx context.Context, load func(context.Context) ([]Edit, error), live *Live) error {
	for range syncEditsReads {
		version := live.EditsVersion()
		edits, err := load(ctx)
		if err != nil {
			return err
		}
		replaced, err := live.ReplaceEditsAt(version, edits)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrEditsRefused, err)
		}
		if replaced {
			return nil
		}
	}
	return ErrEditsBusy
}

// FollowTable reloads both tables into live (Reload) now, then every refresh
// (0 = DefaultTableRefresh) and whenever PolicyChangedSubject or RulesChangedSubject arrives
// on nc (nil = no events), until ctx is done. A reload that fails keeps the edits and
// overrides in force and is retried at the next tick: a database outage must not drop every
// tenant back to its plan, nor the policy back to its file.
func FollowTable(ctx context.Context, t *Table, live *Live, nc *nats.Conn, refresh time.Duration, log *slog.Logger) error {
	if refresh <= 0 {
		refresh = DefaultTableRefresh
	}
	changed := make(chan struct{}, 1)
	if nc != nil {
		for _, subject := range []string{PolicyChangedSubject, RulesChangedSubject} {
			sub, err := nc.Subscribe(subject, func(*nats.Msg) {
				select {
				case changed <- struct{}{}:
				default: // a reload is already pending; it will read this change too
				}
			})
			if err != nil {
				return fmt.Errorf("subscribe %s: %w", subject, err)
			}
			defer func() { _ = sub.Unsubscribe() }()
		}
	}
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	for {
		loadCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := t.Reload(loadCtx, live)
		cancel()
		if err != nil {
			log.Warn("policy tables reload failed; keeping the edits and overrides in force", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-changed:
		}
	}
}
