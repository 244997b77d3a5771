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

// DefaultLayout is the seat map of an event nobody declared one for, from its ticket classes
// in order: a GA class becomes a counter of its capacity, a seated class a section ("A", "B",
// … "AA") of equal rows of 10 to 25 seats holding exactly its capacity (a remainder row, and
// every 200 rows, start another section). Deterministic; FlashSale is left false (the event's).
// Layout.Validate fails only for bad classes: none, a bad id, a capacity below 1, too many seats.
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
