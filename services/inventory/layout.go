package inventory

// TicketClass is what inventory needs of one of the catalog's ticket classes to lay out its
// tickets: the class id, whether fans pick seats, and how many tickets exist.
type TicketClass struct {
	ID       string
	Seated   bool
	Capacity int
}

// The row lengths DefaultLayout picks from: rows of about 20 seats read like a venue's,
// and any length from 10 to 25 is close enough to take when it divides a class exactly.
const (
	defaultSeatsPerRow = 20
	minSeatsPerRow     = 10
	maxSeatsPerRowPick = 25
)

// DefaultLayout is the seat map inventory lays out for an event nobody declared one for
// (see Store.ApplyCatalogLayout), from the event's ticket classes in order: each general-
// admission class becomes a counter of its capacity, each seated class a section of equal
// rows of about 20 seats. Sections are lettered "A", "B", … "Z", "AA", … in class order.
// FlashSale is left false: it belongs to the event, not to its classes.
//
// A seated class gets exactly its capacity in seats, never more: the catalog sells no
// ticket inventory has no seat for, and inventory holds no seat the catalog has no price
// for. When no row length from 10 to 25 divides the capacity, the class gets rows of 20 and
// its remaining seats as one shorter row, a section of its own; a class too big for one
// section (200 rows) spans several. The layout is deterministic, so every replica and every
// redelivered event lays out the same seats.
//
// The result is invalid (Layout.Validate names the field) only when classes are: none, an
// id inventory cannot store, a capacity below 1, or more seats than a map may hold.
func DefaultLayout(classes []TicketClass) Layout {
	var l Layout
	for _, c := range classes {
		if !c.Seated {
			l.GA = append(l.GA, GAClass{Class: c.ID, Capacity: c.Capacity})
			continue
		}
		for _, b := range seatBlocks(c.Capacity) {
			l.Sections = append(l.Sections, SectionLayout{ID: sectionName(len(l.Sections)), Class: c.ID, Rows: b.rows, SeatsPerRow: b.perRow})
		}
	}
	return l
}

// seatBlock is rows × perRow seats: one section.
type seatBlock struct{ rows, perRow int }

// seatBlocks cuts capacity seats into sections: one of equal rows when a row length from 10
// to 25 (the nearest to 20 first) divides it within 200 rows; else rows of 20, up to 200 per
// section, then the remainder as one row. A capacity below 1 gives one empty section, which
// Validate refuses by name rather than the class vanishing from the map.
func seatBlocks(capacity int) []seatBlock {
	if capacity < 1 {
		return []seatBlock{{0, defaultSeatsPerRow}}
	}
	for d := 0; d <= defaultSeatsPerRow-minSeatsPerRow; d++ {
		for _, per := range []int{defaultSeatsPerRow - d, defaultSeatsPerRow + d} {
			if per >= minSeatsPerRow && per <= maxSeatsPerRowPick && capacity%per == 0 && capacity/per <= maxRowsPerSection {
				return []seatBlock{{capacity / per, per}}
			}
		}
	}
	var blocks []seatBlock
	for rows := capacity / defaultSeatsPerRow; rows > 0; rows -= maxRowsPerSection {
		blocks = append(blocks, seatBlock{min(rows, maxRowsPerSection), defaultSeatsPerRow})
	}
	if rest := capacity % defaultSeatsPerRow; rest > 0 {
		blocks = append(blocks, seatBlock{1, rest})
	}
	return blocks
}

// sectionName is the i-th section's id counting from 0, as spreadsheet columns go: "A" …
// "Z", "AA", "AB", ….
func sectionName(i int) string {
	var b []byte
	for i++; i > 0; i = (i - 1) / 26 {
		b = append([]byte{byte('A' + (i-1)%26)}, b...)
	}
	return string(b)
}
