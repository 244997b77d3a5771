package inventory

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
)

// Store keeps seat maps and holds in a SQL database (SQLite or PostgreSQL) and writes the
// events announcing hold changes in the same transactions (platform/outbox). Any number of
// Stores may share one database: a claim is one conditional UPDATE, a hold's change locks its
// row first. Make one as &Store{DB: db}; every other field's zero value is its default. Call
// Init once, then use the Store from any goroutine.
type Store struct {
	// DB holds the schema of Migrations. Required.
	DB *sqldb.DB
	// Clock decides expiry; the zero Clock is time.Now.
	Clock clock.Clock
	// IDs makes hold ids; nil means ids.New.
	IDs ids.Func
	// HoldTTL is how long a new hold lasts; 0 means DefaultHoldTTL.
	HoldTTL time.Duration
	// MaxTicketsPerAccount is how many tickets of one event one account may hold at a time,
	// across its active holds (see CheckAccountCap and PlaceHold); 0 means
	// DefaultMaxTicketsPerAccount.
	MaxTicketsPerAccount int
	// PassKey verifies waitroom admission passes for flash-sale events; nil refuses
	// flash-sale holds (see CheckAdmission).
	PassKey ed25519.PublicKey
	// Committed, when set, is called after a transaction that added events commits, so a
	// relay publishes them at once (outbox.Relay.Notify).
	Committed func()
	// MeterProvider receives the hold metrics (metrics.go); nil means none.
	MeterProvider metric.MeterProvider

	metrics *metrics
}

// Init prepares the database beside the migrations (the outbox table) and the metrics.
func (s *Store) Init(ctx context.Context) error {
	s.metrics = newMetrics(s.MeterProvider)
	if err := outbox.EnsureTable(ctx, s.DB); err != nil {
		return fmt.Errorf("inventory store: %w", err)
	}
	return nil
}

// forUpdate and forShare lock the rows a SELECT reads until the transaction ends, on
// PostgreSQL. SQLite has no row locks and needs none: every transaction begins IMMEDIATE
// (see sqldb.Open) and so runs alone.
func (s *Store) forUpdate() string { return s.lockClause(" FOR UPDATE") }
func (s *Store) forShare() string  { return s.lockClause(" FOR SHARE") }

func (s *Store) lockClause(c string) string {
	if s.DB.Dialect == sqldb.Postgres {
		return c
	}
	return ""
}

func (s *Store) holdTTL() time.Duration { return cmp.Or(s.HoldTTL, DefaultHoldTTL) }

func (s *Store) maxTicketsPerAccount() int {
	return cmp.Or(s.MaxTicketsPerAccount, DefaultMaxTicketsPerAccount)
}

// msOrNull stores t as milliseconds since the epoch, the zero time as NULL.
func msOrNull(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// timeOrZero reads what msOrNull stored.
func timeOrZero(ms sql.NullInt64) time.Time {
	if !ms.Valid {
		return time.Time{}
	}
	return time.UnixMilli(ms.Int64).UTC()
}

// placeholders returns "?, ?, …" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// querier is what *sql.DB and *sql.Tx share, so reads run inside or outside a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ querier = (*sql.Tx)(nil)
	_ querier = (*sqldb.DB)(nil)
)

// SeatMap returns eventID's seat map with every seat's status, or NotFound.
func (s *Store) SeatMap(ctx context.Context, eventID string) (SeatMap, error) {
	var flash bool
	err := s.DB.QueryRowContext(ctx, s.DB.Rebind(`SELECT flash_sale FROM events WHERE event_id = ?`), eventID).Scan(&flash)
	if errors.Is(err, sql.ErrNoRows) {
		return SeatMap{}, problem.New(problem.NotFound, "event %s has no seat map", eventID)
	}
	if err != nil {
		return SeatMap{}, fmt.Errorf("read event: %w", err)
	}
	rows, err := s.DB.QueryContext(ctx, s.DB.Rebind(`SELECT seat_id, section, row_num, number, class_id, status
		FROM seats WHERE event_id = ? ORDER BY section_pos, row_num, number`), eventID)
	if err != nil {
		return SeatMap{}, fmt.Errorf("read seats: %w", err)
	}
	defer rows.Close()
	var seats []Seat
	for rows.Next() {
		var st Seat
		if err := rows.Scan(&st.ID, &st.Section, &st.Row, &st.Number, &st.Class, &st.Status); err != nil {
			return SeatMap{}, fmt.Errorf("read seats: %w", err)
		}
		seats = append(seats, st)
	}
	if err := rows.Err(); err != nil {
		return SeatMap{}, fmt.Errorf("read seats: %w", err)
	}
	ga, err := s.gaClasses(ctx, eventID)
	if err != nil {
		return SeatMap{}, err
	}
	return buildSeatMap(eventID, flash, seats, ga), nil
}

func (s *Store) gaClasses(ctx context.Context, eventID string) ([]GAAvailability, error) {
	rows, err := s.DB.QueryContext(ctx, s.DB.Rebind(`SELECT class_id, capacity, held, sold FROM ga_classes WHERE event_id = ? ORDER BY class_id`), eventID)
	if err != nil {
		return nil, fmt.Errorf("read GA classes: %w", err)
	}
	defer rows.Close()
	var out []GAAvailability
	for rows.Next() {
		var g GAAvailability
		if err := rows.Scan(&g.Class, &g.Total, &g.Held, &g.Sold); err != nil {
			return nil, fmt.Errorf("read GA classes: %w", err)
		}
		g.Available = g.Total - g.Held - g.Sold
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read GA classes: %w", err)
	}
	return out, nil
}

// MaxAvailabilityBatch bounds one Availability call, which a feed makes per page of events.
const MaxAvailabilityBatch = 100

// Availability counts the tickets of each event in eventIDs by state, in two queries
// whatever the number of events. Events without a seat map are absent from the result.
func (s *Store) Availability(ctx context.Context, eventIDs []string) (map[string]Counts, error) {
	if len(eventIDs) > MaxAvailabilityBatch {
		return nil, problem.InvalidField("event_ids", "want at most %d ids", MaxAvailabilityBatch)
	}
	out := map[string]Counts{}
	if len(eventIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(eventIDs))
	for i, id := range eventIDs {
		args[i] = id
	}
	in := placeholders(len(eventIDs))
	rows, err := s.DB.QueryContext(ctx, s.DB.Rebind(`SELECT event_id, status, count(*) FROM seats
		WHERE event_id IN (`+in+`) GROUP BY event_id, status`), args...)
	if err != nil {
		return nil, fmt.Errorf("count seats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var st SeatStatus
		var n int
		if err := rows.Scan(&id, &st, &n); err != nil {
			return nil, fmt.Errorf("count seats: %w", err)
		}
		out[id] = out[id].Add(seatCounts(st, n))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count seats: %w", err)
	}
	ga, err := s.DB.QueryContext(ctx, s.DB.Rebind(`SELECT event_id, sum(capacity), sum(held), sum(sold) FROM ga_classes
		WHERE event_id IN (`+in+`) GROUP BY event_id`), args...)
	if err != nil {
		return nil, fmt.Errorf("count GA tickets: %w", err)
	}
	defer ga.Close()
	for ga.Next() {
		var id string
		var c Counts
		if err := ga.Scan(&id, &c.Total, &c.Held, &c.Sold); err != nil {
			return nil, fmt.Errorf("count GA tickets: %w", err)
		}
		c.Available = c.Total - c.Held - c.Sold
		out[id] = out[id].Add(c)
	}
	if err := ga.Err(); err != nil {
		return nil, fmt.Errorf("count GA tickets: %w", err)
	}
	return out, nil
}
