package inventory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/sqldb/keyset"
)

// Hold returns hold id in any state. account "" is a trusted service call; otherwise it
// must own the hold.
func (s *Store) Hold(ctx context.Context, id, account string) (Hold, error) {
	hs, err := s.readHolds(ctx, s.DB, `WHERE id = ?`, id)
	if err != nil {
		return Hold{}, err
	}
	if len(hs) == 0 {
		return Hold{}, problem.New(problem.NotFound, "no hold %s", id)
	}
	if err := hs[0].CheckOwner(account); err != nil {
		return Hold{}, err
	}
	return hs[0], nil
}

// newestFirst is the list ListHolds pages through.
var newestFirst = keyset.List[Hold]{
	Select: `SELECT ` + holdColumns + ` FROM holds`,
	Order:  keyset.Order{Key: "created_ms", Desc: true},
	Scan:   scanHold,
	Cursor: func(h Hold) keyset.Cursor { return keyset.Cursor{Key: h.CreatedAt.UnixMilli(), ID: h.ID} },
}

// ListHolds returns account's holds, newest first, one page at a time. cursor is "" for the
// first page, else a next cursor ListHolds returned; next is "" on the last page.
func (s *Store) ListHolds(ctx context.Context, account string, limit int, cursor string) (holds []Hold, next string, err error) {
	holds, next, err = newestFirst.Page(ctx, s.DB, limit, cursor, "account = ?", account)
	if err != nil {
		return nil, "", fmt.Errorf("list holds: %w", err)
	}
	return holds, next, s.readHoldSeats(ctx, s.DB, holds)
}

const holdColumns = `id, event_id, account, status, class_id, quantity, created_ms, expires_ms`

// readHolds reads the holds a WHERE (and ORDER/LIMIT/lock) clause selects, with their seats
// and ticket counts, in two queries.
func (s *Store) readHolds(ctx context.Context, q querier, clause string, args ...any) ([]Hold, error) {
	holds, err := sqldb.Query(ctx, s.DB, q, `SELECT `+holdColumns+` FROM holds `+clause, args, scanHold)
	if err != nil {
		return nil, fmt.Errorf("read holds: %w", err)
	}
	return holds, s.readHoldSeats(ctx, q, holds)
}

// scanHold reads a row of holdColumns; the seats of a seated hold are in another table
// (readHoldSeats).
func scanHold(r sqldb.Scanner) (Hold, error) {
	var h Hold
	var created, expires int64
	if err := r.Scan(&h.ID, &h.EventID, &h.Account, &h.Status, &h.Class, &h.Quantity, &created, &expires); err != nil {
		return Hold{}, err
	}
	h.CreatedAt, h.ExpiresAt = time.UnixMilli(created).UTC(), time.UnixMilli(expires).UTC()
	if h.Class != "" {
		h.Tickets = []TicketCount{{Class: h.Class, Quantity: h.Quantity}}
	}
	return h, nil
}

// readHoldSeats fills in the seats and per-class counts of the seated holds among holds.
func (s *Store) readHoldSeats(ctx context.Context, q querier, holds []Hold) error {
	byID := map[string]*Hold{}
	var args []any
	for i := range holds {
		if holds[i].Class == "" {
			byID[holds[i].ID] = &holds[i]
			args = append(args, holds[i].ID)
		}
	}
	if len(args) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, s.DB.Rebind(`SELECT hold_id, seat_id, class_id FROM hold_seats
		WHERE hold_id IN (`+placeholders(len(args))+`)`), args...)
	if err != nil {
		return fmt.Errorf("read hold seats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var holdID, seat, class string
		if err := rows.Scan(&holdID, &seat, &class); err != nil {
			return fmt.Errorf("read hold seats: %w", err)
		}
		h := byID[holdID]
		h.Seats = append(h.Seats, seat)
		h.Tickets = addTicket(h.Tickets, class)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read hold seats: %w", err)
	}
	for _, h := range byID {
		slices.SortFunc(h.Seats, CompareSeatIDs)
		slices.SortFunc(h.Tickets, func(a, b TicketCount) int { return strings.Compare(a.Class, b.Class) })
	}
	return nil
}

func addTicket(tickets []TicketCount, class string) []TicketCount {
	for i := range tickets {
		if tickets[i].Class == class {
			tickets[i].Quantity++
			return tickets
		}
	}
	return append(tickets, TicketCount{Class: class, Quantity: 1})
}
