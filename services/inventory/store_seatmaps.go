package inventory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"boxoffice.dev/platform/problem"
)

// A seat map is declared by an admin (PutSeatMap) or laid out by inventory from the
// catalog's ticket classes (ApplyCatalogLayout); events.source says which.
const (
	sourceAdmin   = "admin"
	sourceCatalog = "catalog"
)

// Sync is what ApplyCatalogLayout did with one catalog change.
type Sync string

// The outcomes of ApplyCatalogLayout.
const (
	SyncCreated  Sync = "created"  // the event had no seat map; it has the default one now
	SyncReplaced Sync = "replaced" // new classes, no ticket held or sold: the seats were laid out again
	SyncUpdated  Sync = "updated"  // the same seats; only the terms of sale changed: the flash-sale flag, the SaleWindow
	SyncInUse    Sync = "in_use"   // new classes, but tickets are held or sold: the seats stay, the terms of sale follow
	SyncDeclared Sync = "declared" // an admin declared this map: the catalog's classes do not change it, its SaleWindow does
	SyncCurrent  Sync = "current"  // nothing to change: the same layout, or a change no newer than the one applied
)

// PutSeatMap declares (or replaces) the seat map of eventID. Replacing is refused with
// Conflict while any ticket of the event is held or sold: seats are not moved under a fan.
// A declared map wins over the default one: later catalog changes leave its seats alone. It
// leaves the event's SaleWindow as it is: the catalog, not the map, says when tickets sell.
func (s *Store) PutSeatMap(ctx context.Context, eventID string, l Layout) (SeatMap, error) {
	if err := ValidateEventID("id", eventID); err != nil {
		return SeatMap{}, err
	}
	if err := l.Validate(); err != nil {
		return SeatMap{}, err
	}
	layout, err := json.Marshal(l)
	if err != nil {
		return SeatMap{}, fmt.Errorf("encode layout: %w", err)
	}
	err = s.DB.InTx(ctx, func(tx *sql.Tx) error {
		// The event row is the seat map's lock: PlaceHold reads it FOR SHARE, so on
		// PostgreSQL no hold lands between the check below and the replacement.
		var flash bool
		err := tx.QueryRowContext(ctx, s.DB.Rebind(`SELECT flash_sale FROM events WHERE event_id = ?`+s.forUpdate()), eventID).Scan(&flash)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read event: %w", err)
		default:
			busy, err := s.inUse(ctx, tx, eventID)
			if err != nil {
				return err
			}
			if busy {
				return problem.New(problem.Conflict, "event %s has held or sold tickets: its seat map cannot change", eventID)
			}
			if err := s.clearSeats(ctx, tx, eventID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO events (event_id, flash_sale, updated_ms, source, layout) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (event_id) DO UPDATE SET flash_sale = excluded.flash_sale, updated_ms = excluded.updated_ms,
				source = excluded.source, layout = excluded.layout`),
			eventID, l.FlashSale, s.Clock.Now().UnixMilli(), sourceAdmin, string(layout)); err != nil {
			return fmt.Errorf("write event: %w", err)
		}
		return s.insertLayout(ctx, tx, eventID, l)
	})
	if err != nil {
		return SeatMap{}, err
	}
	return s.SeatMap(ctx, eventID)
}

// ApplyCatalogLayout brings eventID's seat map in step with version of the catalog's event,
// laid out as l (DefaultLayout) and on sale in sale (CatalogSale), in one transaction, and
// says what it did (Sync). A version no newer than the one applied changes nothing; an admin's
// map keeps its seats, and seats held or sold never move, but both follow the flag and sale.
// Idempotent; Stores applying one event at once serialise on the event's row.
func (s *Store) ApplyCatalogLayout(ctx context.Context, eventID string, version int64, l Layout, sale SaleWindow) (Sync, error) {
	if err := ValidateEventID("event.id", eventID); err != nil {
		return "", err
	}
	if err := l.Validate(); err != nil {
		return "", err
	}
	layout, err := json.Marshal(l)
	if err != nil {
		return "", fmt.Errorf("encode layout: %w", err)
	}
	onSale, starts := msOrNull(sale.Opens), msOrNull(sale.Starts)
	var outcome Sync
	err = s.DB.InTx(ctx, func(tx *sql.Tx) error {
		now := s.Clock.Now().UnixMilli()
		res, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO events (event_id, flash_sale, updated_ms, source, catalog_version, layout, on_sale_ms, starts_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`),
			eventID, l.FlashSale, now, sourceCatalog, version, string(layout), onSale, starts)
		if err != nil {
			return fmt.Errorf("write event: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("write event: %w", err)
		} else if n == 1 {
			outcome = SyncCreated
			return s.insertLayout(ctx, tx, eventID, l)
		}

		var source, stored string
		var applied int64
		var oldOnSale, oldStarts sql.NullInt64
		if err := tx.QueryRowContext(ctx, s.DB.Rebind(`SELECT source, catalog_version, layout, on_sale_ms, starts_ms FROM events WHERE event_id = ?`+s.forUpdate()), eventID).
			Scan(&source, &applied, &stored, &oldOnSale, &oldStarts); err != nil {
			return fmt.Errorf("read event: %w", err)
		}
		// A row stored before inventory kept sale windows (migration 003) has none, at the
		// version it has: the same version brings it, once. After that migration every
		// apply stores the window its version carries, so at an equal version a stored
		// window can only be missing for this reason; a catch-up pass at start fills it.
		windowMissing := applied == version && !oldOnSale.Valid && !oldStarts.Valid && (onSale.Valid || starts.Valid)
		if windowMissing {
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE events SET on_sale_ms = ?, starts_ms = ?, updated_ms = ? WHERE event_id = ?`),
				onSale, starts, now, eventID); err != nil {
				return fmt.Errorf("write event: %w", err)
			}
		}
		if source != sourceCatalog {
			outcome = SyncDeclared
			if applied >= version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE events SET catalog_version = ?, on_sale_ms = ?, starts_ms = ?, updated_ms = ? WHERE event_id = ?`),
				version, onSale, starts, now, eventID); err != nil {
				return fmt.Errorf("write event: %w", err)
			}
			return nil
		}
		if applied >= version {
			outcome = SyncCurrent
			if windowMissing {
				outcome = SyncUpdated
			}
			return nil
		}
		var old Layout
		if err := json.Unmarshal([]byte(stored), &old); err != nil {
			return fmt.Errorf("read layout of %s: %w", eventID, err)
		}
		next := l
		switch {
		case sameSeats(old, l) && old.FlashSale == l.FlashSale && oldOnSale == onSale && oldStarts == starts:
			outcome = SyncCurrent
		case sameSeats(old, l):
			outcome = SyncUpdated
		default:
			busy, err := s.inUse(ctx, tx, eventID)
			if err != nil {
				return err
			}
			if busy {
				outcome = SyncInUse
				next = old
				next.FlashSale = l.FlashSale
				break
			}
			outcome = SyncReplaced
			if err := s.clearSeats(ctx, tx, eventID); err != nil {
				return err
			}
			if err := s.insertLayout(ctx, tx, eventID, l); err != nil {
				return err
			}
		}
		record := layout // the row describes the seats as they are, so not l's when kept
		if outcome == SyncInUse {
			if record, err = json.Marshal(next); err != nil {
				return fmt.Errorf("encode layout: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE events SET flash_sale = ?, catalog_version = ?, layout = ?, on_sale_ms = ?, starts_ms = ?, updated_ms = ?
			WHERE event_id = ?`),
			next.FlashSale, version, string(record), onSale, starts, now, eventID); err != nil {
			return fmt.Errorf("write event: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	s.metrics.seatMapSynced(ctx, outcome)
	return outcome, nil
}

// sameSeats reports whether a and b declare the same sections and GA classes, whatever
// their flash-sale flags.
func sameSeats(a, b Layout) bool {
	return slices.Equal(a.Sections, b.Sections) && slices.Equal(a.GA, b.GA)
}

// inUse reports whether any ticket of eventID is held or sold.
func (s *Store) inUse(ctx context.Context, tx *sql.Tx, eventID string) (bool, error) {
	var busy int
	if err := tx.QueryRowContext(ctx, s.DB.Rebind(`SELECT
		(SELECT count(*) FROM seats WHERE event_id = ? AND status <> 'available') +
		(SELECT count(*) FROM ga_classes WHERE event_id = ? AND held + sold > 0)`), eventID, eventID).Scan(&busy); err != nil {
		return false, fmt.Errorf("check seat map in use: %w", err)
	}
	return busy > 0, nil
}

// clearSeats deletes eventID's seats and GA classes, keeping its events row (the lock).
func (s *Store) clearSeats(ctx context.Context, tx *sql.Tx, eventID string) error {
	for _, q := range []string{`DELETE FROM seats WHERE event_id = ?`, `DELETE FROM ga_classes WHERE event_id = ?`} {
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(q), eventID); err != nil {
			return fmt.Errorf("clear seat map: %w", err)
		}
	}
	return nil
}

// insertLayout writes the seats and GA classes l declares for eventID, all available.
func (s *Store) insertLayout(ctx context.Context, tx *sql.Tx, eventID string, l Layout) error {
	if err := s.insertSeats(ctx, tx, eventID, l); err != nil {
		return err
	}
	for _, g := range l.GA {
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO ga_classes (event_id, class_id, capacity) VALUES (?, ?, ?)`),
			eventID, g.Class, g.Capacity); err != nil {
			return fmt.Errorf("write GA class %s: %w", g.Class, err)
		}
	}
	return nil
}

// seatsPerInsert bounds one multi-row INSERT: 200 rows × 7 values stays far below both
// engines' limits on bound parameters, and a 10,000-seat map takes 50 round trips, not 10,000.
const seatsPerInsert = 200

func (s *Store) insertSeats(ctx context.Context, tx *sql.Tx, eventID string, l Layout) error {
	pos := map[string]int{}
	for i, sec := range l.Sections {
		pos[sec.ID] = i
	}
	seats := l.Seats()
	for len(seats) > 0 {
		n := min(len(seats), seatsPerInsert)
		args := make([]any, 0, n*7)
		for _, st := range seats[:n] {
			args = append(args, eventID, st.ID, st.Section, pos[st.Section], st.Row, st.Number, st.Class)
		}
		q := `INSERT INTO seats (event_id, seat_id, section, section_pos, row_num, number, class_id) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?), ", n), ", ")
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(q), args...); err != nil {
			return fmt.Errorf("write seats: %w", err)
		}
		seats = seats[n:]
	}
	return nil
}
