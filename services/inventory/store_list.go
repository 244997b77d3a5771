package inventory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"boxoffice.dev/platform/problem"
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

// MaxHoldsPage bounds one page of ListHolds; DefaultHoldsPage is a page when none is asked.
const (
	MaxHoldsPage     = 100
	DefaultHoldsPage = 20
)

// newestFirst is the order of ListHolds's pages.
var newestFirst = keyset.Order{Key: "created_ms", Desc: true}

// ListHolds returns account's holds, newest first, one page at a time. cursor is "" for the
// first page, else a next cursor ListHolds returned; next is "" on the last page.
func (s *Store) ListHolds(ctx context.Context, account string, limit int, cursor string) (holds []Hold, next string, err error) {
	limit, after, err := newestFirst.Read(limit, DefaultHoldsPage, MaxHoldsPage, cursor)
	if err != nil {
		return nil, "", err
	}
	cond, args := newestFirst.After(after)
	// One row more than the page says whether another page follows.
	holds, err = s.readHolds(ctx, s.DB, `WHERE account = ? AND `+cond+` ORDER BY `+newestFirst.By()+` LIMIT ?`,
		append(append([]any{account}, args...), limit+1)...)
	if err != nil {
		return nil, "", err
	}
	holds, next = keyset.Trim(holds, limit, func(h Hold) keyset.Cursor {
		return keyset.Cursor{Key: h.CreatedAt.UnixMilli(), ID: h.ID}
	})
	return holds, next, nil
}

// readHolds reads the holds a WHERE (and ORDER/LIMIT/lock) clause selects, with their seats
// and ticket counts, in two queries.
func (s *Store) readHolds(ctx context.Context, q querier, clause string, args ...any) ([]Hold, error) {
	rows, err := q.QueryContext(ctx, s.DB.Rebind(`SELECT id, event_id, account, status, class_id, quantity, created_ms, expires_ms
		FROM holds `+clause), args...)
	if err != nil {
		return nil, fmt.Errorf("read holds: %w", err)
	}
	defer rows.Close()
	var holds []Hold
	for rows.Next() {
		var h Hold
		var created, expires int64
		if err := rows.Scan(&h.ID, &h.EventID, &h.Account, &h.Status, &h.Class, &h.Quantity, &created, &expires); err != nil {
			return nil, fmt.Errorf("read holds: %w", err)
		}
		h.CreatedAt, h.ExpiresAt = time.UnixMilli(created).UTC(), time.UnixMilli(expires).UTC()
		if h.Class != "" {
			h.Tickets = []TicketCount{{Class: h.Class, Quantity: h.Quantity}}
		}
		holds = append(holds, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read holds: %w", err)
	}
	rows.Close() // before the next query: a transaction runs one statement at a time
	return holds, s.readHoldSeats(ctx, q, holds)
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
