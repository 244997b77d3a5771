package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/ids"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
)

// Store keeps venues and events, and adds an outbox row for every change in the same
// transaction. It is safe for concurrent use.
//
// Make one as a literal, &Store{DB: db}, and set what else you need: every other field's
// zero value is its default.
type Store struct {
	// DB holds the tables of migrations/ and the outbox table. Required.
	DB *sqldb.DB
	// Clock stamps changes; the zero Clock is time.Now.
	Clock clock.Clock
	// IDs makes ids for venues and events created without one; nil means ids.New.
	IDs ids.Func
	// Emit turns on the outbox: every change adds its event in its own transaction. Off
	// when there is no NATS to relay them to (NATS_URL unset), so rows do not pile up; read
	// models then rebuild from the catalog when they start.
	Emit bool
	// Committed is called after every transaction that added events, to wake the outbox
	// relay; nil means no call (the relay's own interval finds them).
	Committed func()
}

// The columns of an event, in the order scanEvent reads them.
const eventColumns = `id, title, description, performers, venue_id, city, country, starts_at, on_sale_at,
	flash_sale, image_url, ticket_classes, tags, version, updated_at`

const venueColumns = `id, name, city, country, address, capacity, sections`

// errMoved says a conditional update found the row at another version.
var errMoved = errors.New("version moved")

func notFound(kind, id string) error { return problem.New(problem.NotFound, "no %s %q", kind, id) }

// CreateVenue stores v, giving it an id when it has none. An existing id is a Conflict.
func (s *Store) CreateVenue(ctx context.Context, v Venue) (Venue, error) {
	if err := v.Validate(); err != nil {
		return Venue{}, err
	}
	if v.ID == "" {
		v.ID = s.IDs.New("ven-")
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		ok, err := s.insertVenue(ctx, tx, v)
		if err != nil {
			return err
		}
		if !ok {
			return problem.New(problem.Conflict, "venue %q exists", v.ID)
		}
		return s.emitVenue(ctx, tx, v, s.Clock.Now())
	})
	if err != nil {
		return Venue{}, fmt.Errorf("create venue: %w", err)
	}
	return v, nil
}

// CreateEvent stores e at version 1 with its venue's city and country, giving it an id
// when it has none. An unknown venue is Invalid; an existing id is a Conflict.
func (s *Store) CreateEvent(ctx context.Context, e Event) (Event, error) {
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	if e.ID == "" {
		e.ID = s.IDs.New("evt-")
	}
	e.Version, e.UpdatedAt = 1, s.Clock.Now()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if e, err = s.placeAt(ctx, tx, e); err != nil {
			return err
		}
		ok, err := s.insertEvent(ctx, tx, e)
		if err != nil {
			return err
		}
		if !ok {
			return problem.New(problem.Conflict, "event %q exists", e.ID)
		}
		return s.emitEvent(ctx, tx, eventCreated, e)
	})
	if err != nil {
		return Event{}, fmt.Errorf("create event: %w", err)
	}
	return normalise(e), nil
}

// UpdateEvent applies p to the event id and bumps its version.
//
// The write is conditional on the version read, so of two concurrent updates of one event
// the second finds the version moved and starts over from the new state instead of
// overwriting it; after a few lost races it answers Conflict.
func (s *Store) UpdateEvent(ctx context.Context, id string, p EventPatch) (Event, error) {
	const attempts = 3
	for range attempts {
		var updated Event
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			cur, err := s.event(ctx, tx, id)
			if err != nil {
				return err
			}
			next, err := cur.Apply(p)
			if err != nil {
				return err
			}
			if next, err = s.placeAt(ctx, tx, next); err != nil {
				return err
			}
			next.Version, next.UpdatedAt = cur.Version+1, s.Clock.Now()
			ok, err := s.updateEvent(ctx, tx, next, cur.Version)
			switch {
			case err != nil:
				return err
			case !ok:
				return errMoved
			}
			updated = next
			return s.emitEvent(ctx, tx, eventUpdated, next)
		})
		switch {
		case errors.Is(err, errMoved):
			continue
		case err != nil:
			return Event{}, fmt.Errorf("update event %s: %w", id, err)
		}
		return normalise(updated), nil
	}
	return Event{}, problem.New(problem.Conflict, "event %q is being changed concurrently; retry", id)
}

// Event returns the event id, or a NotFound problem.
func (s *Store) Event(ctx context.Context, id string) (Event, error) {
	return s.event(ctx, s.DB, id)
}

// Events returns the events with the given ids that exist, in the order of ids (repeats
// collapsed), and the ids that matched nothing.
func (s *Store) Events(ctx context.Context, ids []string) (found []Event, missing []string, err error) {
	args, err := idArgs(ids)
	if err != nil || len(args) == 0 {
		return nil, ids, err
	}
	events, err := sqldb.Query(ctx, s.DB, s.DB, `SELECT `+eventColumns+` FROM events WHERE id IN (`+placeholders(len(args))+`)`, args, scanEvent)
	if err != nil {
		return nil, nil, fmt.Errorf("events: %w", err)
	}
	found, missing = pick(ids, events, func(e Event) string { return e.ID })
	return found, missing, nil
}

// Venue returns the venue id, or a NotFound problem.
func (s *Store) Venue(ctx context.Context, id string) (Venue, error) {
	v, err := scanVenue(s.DB.QueryRowContext(ctx, s.DB.Rebind(`SELECT `+venueColumns+` FROM venues WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Venue{}, notFound("venue", id)
	}
	if err != nil {
		return Venue{}, fmt.Errorf("venue %s: %w", id, err)
	}
	return v, nil
}

// Venues is Events for venues.
func (s *Store) Venues(ctx context.Context, ids []string) (found []Venue, missing []string, err error) {
	args, err := idArgs(ids)
	if err != nil || len(args) == 0 {
		return nil, ids, err
	}
	venues, err := sqldb.Query(ctx, s.DB, s.DB, `SELECT `+venueColumns+` FROM venues WHERE id IN (`+placeholders(len(args))+`)`, args, scanVenue)
	if err != nil {
		return nil, nil, fmt.Errorf("venues: %w", err)
	}
	found, missing = pick(ids, venues, func(v Venue) string { return v.ID })
	return found, missing, nil
}

// Empty reports whether the catalog holds no venue and no event.
func (s *Store) Empty(ctx context.Context) (bool, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM venues) + (SELECT count(*) FROM events)`).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("count catalog: %w", err)
	}
	return n == 0, nil
}

// placeAt copies the city and country of e's venue into e; an unknown venue is Invalid.
func (s *Store) placeAt(ctx context.Context, tx *sql.Tx, e Event) (Event, error) {
	err := tx.QueryRowContext(ctx, s.DB.Rebind(`SELECT city, country FROM venues WHERE id = ?`), e.VenueID).Scan(&e.City, &e.Country)
	if errors.Is(err, sql.ErrNoRows) {
		return e, problem.InvalidField("venue_id", "no venue %q", e.VenueID)
	}
	if err != nil {
		return e, fmt.Errorf("venue of %s: %w", e.ID, err)
	}
	return e, nil
}

// insertVenue adds v unless its id exists; ok reports whether it did. ON CONFLICT DO
// NOTHING settles two concurrent creators of one id without an error on either dialect.
func (s *Store) insertVenue(ctx context.Context, tx *sql.Tx, v Venue) (ok bool, err error) {
	sections, err := marshal(orEmpty(v.Sections))
	if err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO venues
		(id, name, city, city_key, country, address, capacity, sections, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		v.ID, v.Name, v.City, Fold(v.City), v.Country, v.Address, v.Capacity, sections, s.Clock.Now().UnixMilli())
	return affected(res, err)
}

// insertEvent adds e unless its id exists; ok reports whether it did.
func (s *Store) insertEvent(ctx context.Context, tx *sql.Tx, e Event) (ok bool, err error) {
	c, err := eventRow(e)
	if err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO events
		(id, title, title_key, description, performers, performers_key, venue_id, city, city_key, country,
		 starts_at, on_sale_at, flash_sale, image_url, ticket_classes, min_price, tags, tags_key,
		 version, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		e.ID, e.Title, Fold(e.Title), e.Description, c.performers, c.performersKey, e.VenueID, e.City, Fold(e.City), e.Country,
		e.StartsAt.UnixMilli(), e.OnSaleAt.UnixMilli(), e.FlashSale, e.ImageURL, c.classes, e.MinPrice().Minor, c.tags, c.tagsKey,
		e.Version, e.UpdatedAt.UnixMilli(), e.UpdatedAt.UnixMilli())
	return affected(res, err)
}

// updateEvent writes e over the row still at version from; ok is false when the row moved.
func (s *Store) updateEvent(ctx context.Context, tx *sql.Tx, e Event, from int64) (ok bool, err error) {
	c, err := eventRow(e)
	if err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE events SET
		title = ?, title_key = ?, description = ?, performers = ?, performers_key = ?, venue_id = ?,
		city = ?, city_key = ?, country = ?, starts_at = ?, on_sale_at = ?, flash_sale = ?, image_url = ?,
		ticket_classes = ?, min_price = ?, tags = ?, tags_key = ?, version = ?, updated_at = ?
		WHERE id = ? AND version = ?`),
		e.Title, Fold(e.Title), e.Description, c.performers, c.performersKey, e.VenueID,
		e.City, Fold(e.City), e.Country, e.StartsAt.UnixMilli(), e.OnSaleAt.UnixMilli(), e.FlashSale, e.ImageURL,
		c.classes, e.MinPrice().Minor, c.tags, c.tagsKey, e.Version, e.UpdatedAt.UnixMilli(),
		e.ID, from)
	return affected(res, err)
}

// columns are an event's encoded list columns.
type columns struct{ performers, performersKey, classes, tags, tagsKey string }

func eventRow(e Event) (columns, error) {
	c := columns{performersKey: keyList(e.Performers), tagsKey: keyList(e.Tags)}
	var errs [3]error
	c.performers, errs[0] = marshal(orEmpty(e.Performers))
	c.classes, errs[1] = marshal(orEmpty(e.TicketClasses))
	c.tags, errs[2] = marshal(orEmpty(e.Tags))
	return c, errors.Join(errs[:]...)
}

// keyList folds names into '|a|b|', so that '%|b|%' matches one name exactly and '%b%' a
// substring of any.
func keyList(names []string) string {
	var b strings.Builder
	b.WriteString("|")
	for _, n := range names {
		b.WriteString(strings.ReplaceAll(Fold(n), "|", " "))
		b.WriteString("|")
	}
	return b.String()
}

func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func affected(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// querier is what reads need of *sql.DB and *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ querier = (*sql.DB)(nil)
	_ querier = (*sql.Tx)(nil)
)

func (s *Store) event(ctx context.Context, q querier, id string) (Event, error) {
	e, err := scanEvent(q.QueryRowContext(ctx, s.DB.Rebind(`SELECT `+eventColumns+` FROM events WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Event{}, notFound("event", id)
	}
	if err != nil {
		return Event{}, fmt.Errorf("event %s: %w", id, err)
	}
	return e, nil
}

func scanEvent(r sqldb.Scanner) (Event, error) {
	var (
		e                             Event
		performers, classes, tags     string
		startsAt, onSaleAt, updatedAt int64
	)
	err := r.Scan(&e.ID, &e.Title, &e.Description, &performers, &e.VenueID, &e.City, &e.Country, &startsAt, &onSaleAt,
		&e.FlashSale, &e.ImageURL, &classes, &tags, &e.Version, &updatedAt)
	if err != nil {
		return Event{}, err
	}
	e.StartsAt, e.OnSaleAt, e.UpdatedAt = fromMillis(startsAt), fromMillis(onSaleAt), fromMillis(updatedAt)
	err = errors.Join(
		json.Unmarshal([]byte(performers), &e.Performers),
		json.Unmarshal([]byte(classes), &e.TicketClasses),
		json.Unmarshal([]byte(tags), &e.Tags))
	if err != nil {
		return Event{}, fmt.Errorf("event %s: %w", e.ID, err)
	}
	return e, nil
}

func scanVenue(r sqldb.Scanner) (Venue, error) {
	var (
		v        Venue
		sections string
	)
	if err := r.Scan(&v.ID, &v.Name, &v.City, &v.Country, &v.Address, &v.Capacity, &sections); err != nil {
		return Venue{}, err
	}
	if err := json.Unmarshal([]byte(sections), &v.Sections); err != nil {
		return Venue{}, fmt.Errorf("venue %s: %w", v.ID, err)
	}
	return v, nil
}

// normalise gives e the form a read returns: UTC times at millisecond precision, empty
// lists rather than nil.
func normalise(e Event) Event {
	e.StartsAt = fromMillis(e.StartsAt.UnixMilli())
	e.OnSaleAt = fromMillis(e.OnSaleAt.UnixMilli())
	e.UpdatedAt = fromMillis(e.UpdatedAt.UnixMilli())
	e.Performers, e.TicketClasses, e.Tags = orEmpty(e.Performers), orEmpty(e.TicketClasses), orEmpty(e.Tags)
	return e
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// maxBatch bounds one batch read, and so the number of placeholders in one statement.
const maxBatch = 500

// idArgs turns ids into query arguments, refusing more than maxBatch.
func idArgs(ids []string) ([]any, error) {
	if len(ids) > maxBatch {
		return nil, problem.InvalidField("ids", "at most %d", maxBatch)
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args, nil
}

// pick orders found values by ids, once each, and lists the ids not found.
func pick[T any](ids []string, values []T, id func(T) string) (found []T, missing []string) {
	byID := make(map[string]T, len(values))
	for _, v := range values {
		byID[id(v)] = v
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if v, ok := byID[id]; ok {
			found = append(found, v)
		} else {
			missing = append(missing, id)
		}
	}
	return found, missing
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// inTx runs fn in a transaction (sqldb.DB.InTx: fn may run again after a transient
// conflict), then tells Committed.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.DB.InTx(ctx, fn); err != nil {
		return err
	}
	if s.Committed != nil {
		s.Committed()
	}
	return nil
}
