package inventory

import (
	"context"
	"fmt"

	"boxoffice.dev/platform/problem"
)

// DemoClass is one ticket class of a demo event, as the catalog's demo declares it.
type DemoClass struct {
	ID       string // the catalog's ticket class id, e.g. "class-1" or "plateia"
	Seated   bool
	Capacity int
}

// DemoEvent is what a seeder passes per event: its id, whether it is a flash sale, and its
// ticket classes. Inventory does not import the catalog; the seeder (which knows both)
// translates catalog.DemoCatalog's events into these.
type DemoEvent struct {
	EventID   string
	FlashSale bool
	Classes   []DemoClass
}

// demoSeatsPerRow is the row length DemoLayout aims for; it takes the nearest length that
// divides a class's capacity so the section holds exactly that many seats.
const demoSeatsPerRow = 20

// DemoLayout lays e out deterministically: each seated class becomes a section, lettered
// "A", "B", … in class order, of equal rows of about 20 seats; each GA class a counter of its
// capacity. When no row length from 10 to 25 divides a capacity, the last seats round it up
// to whole rows of 20.
func DemoLayout(e DemoEvent) Layout {
	l := Layout{FlashSale: e.FlashSale}
	for _, c := range e.Classes {
		if !c.Seated {
			l.GA = append(l.GA, GAClass{Class: c.ID, Capacity: c.Capacity})
			continue
		}
		rows, per := demoRows(c.Capacity)
		l.Sections = append(l.Sections, SectionLayout{
			ID: string(rune('A' + len(l.Sections))), Class: c.ID, Rows: rows, SeatsPerRow: per,
		})
	}
	return l
}

// demoRows picks rows × per for capacity: the row length nearest demoSeatsPerRow (from 10
// to 25) that divides it, else rows of demoSeatsPerRow rounded up.
func demoRows(capacity int) (rows, per int) {
	for d := 0; d <= 10; d++ {
		for _, p := range []int{demoSeatsPerRow - d, demoSeatsPerRow + d} {
			if p >= 10 && p <= 25 && capacity%p == 0 {
				return capacity / p, p
			}
		}
	}
	return (capacity + demoSeatsPerRow - 1) / demoSeatsPerRow, demoSeatsPerRow
}

// SeedDemo stores DemoLayout(e) for each event that has no seat map yet and reports how
// many it stored: safe to call on every start, and it never touches a map in use.
func (s *Store) SeedDemo(ctx context.Context, events []DemoEvent) (int, error) {
	seeded := 0
	for _, e := range events {
		_, err := s.SeatMap(ctx, e.EventID)
		switch {
		case err == nil:
			continue
		case problem.CodeOf(err) != problem.NotFound:
			return seeded, err
		}
		if _, err := s.PutSeatMap(ctx, e.EventID, DemoLayout(e)); err != nil {
			return seeded, fmt.Errorf("seed %s: %w", e.EventID, err)
		}
		seeded++
	}
	return seeded, nil
}
