// Package inventory is BoxOffice's inventory: seat maps, holds that expire and sold seats;
// it never oversells. A seat map is laid out from the catalog's ticket classes when the
// catalog announces an event (SeatMapper, DefaultLayout), or declared by an admin.
//
// This file holds the domain: seat maps and their validation, hold requests and the rules of
// a hold's life (active → confirmed | released | expired), availability levels. It does no
// I/O; store.go persists it, http.go and grpc.go serve it, run.go wires the process.
package inventory

import (
	"cmp"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/services/waitroom/pass"
)

// MaxTicketsPerHold bounds one hold: enough for a family, too few for a scalper's bot to
// empty a section in one request.
const MaxTicketsPerHold = 8

// DefaultMaxTicketsPerAccount is how many tickets of one event one account may hold at a
// time, across its active holds, when the Store sets no other cap (see CheckAccountCap): one
// hold's worth, so an account admitted to a flash sale cannot hoard its seats hold after hold.
const DefaultMaxTicketsPerAccount = MaxTicketsPerHold

// DefaultHoldTTL is how long a hold keeps its seats when the process sets no HOLD_TTL: long
// enough to pay, short enough that abandoned carts return seats during a flash sale.
const DefaultHoldTTL = 5 * time.Minute

// Limits of a seat map, so one admin request cannot ask for a billion rows.
const (
	maxRowsPerSection = 200
	maxSeatsPerRow    = 200
	maxSeatsPerMap    = 100_000
	maxGACapacity     = 1_000_000
)

// SeatStatus is where a seat is in its life.
type SeatStatus string

// The seat statuses, as stored and as served.
const (
	SeatAvailable SeatStatus = "available"
	SeatHeld      SeatStatus = "held"
	SeatSold      SeatStatus = "sold"
)

// HoldStatus is where a hold is in its life. Only an active hold owns seats; the other
// three are final.
type HoldStatus string

// The hold statuses.
const (
	HoldActive    HoldStatus = "active"
	HoldConfirmed HoldStatus = "confirmed" // its seats are sold
	HoldReleased  HoldStatus = "released"  // given up by its owner or a failed order
	HoldExpired   HoldStatus = "expired"   // released by the sweeper after ExpiresAt
)

// Layout is what an admin (or the demo seeder) declares for an event: seated sections cut
// into rows of seats, and general-admission classes that only count. The zero Layout is
// invalid: an event needs at least one section or GA class.
type Layout struct {
	FlashSale bool            `json:"flash_sale"` // holds need an admission pass from the waitroom
	Sections  []SectionLayout `json:"sections"`
	GA        []GAClass       `json:"ga"`
}

// SectionLayout is a block of Rows rows (labelled 1…Rows) of SeatsPerRow seats (numbered
// 1…SeatsPerRow), all of one ticket class. Seat ids read "<section>-<row>-<number>".
type SectionLayout struct {
	ID          string `json:"id"`    // "A", "PIT", "B2"
	Class       string `json:"class"` // a ticket class id of the event, e.g. "cat-1"
	Rows        int    `json:"rows"`
	SeatsPerRow int    `json:"seats_per_row"`
}

// GAClass is a general-admission ticket class: Capacity tickets, no seat numbers.
type GAClass struct {
	Class    string `json:"class"`
	Capacity int    `json:"capacity"`
}

var (
	sectionIDPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,16}$`)
	eventIDPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// classIDPattern takes every id the catalog gives a ticket class, so any event the
	// catalog accepts gets a seat map (see DefaultLayout).
	classIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// classIDWant is what a refused class id should have been.
const classIDWant = "want 1 to 64 letters, digits, '-' or '_'"

// ValidateEventID rejects ids that are empty, too long or carry characters no BoxOffice id
// uses, naming field in the error.
func ValidateEventID(field, id string) error {
	if !eventIDPattern.MatchString(id) {
		return problem.InvalidField(field, "want 1 to 64 letters, digits, '.', '_' or '-'")
	}
	return nil
}

// Validate reports the first thing wrong with l, naming the field ("sections[1].rows").
func (l Layout) Validate() error {
	if len(l.Sections) == 0 && len(l.GA) == 0 {
		return problem.InvalidField("sections", "want at least one section or GA class")
	}
	sections := map[string]bool{}
	seatedClasses := map[string]bool{}
	total := 0
	for i, s := range l.Sections {
		f := fmt.Sprintf("sections[%d]", i)
		switch {
		case !sectionIDPattern.MatchString(s.ID):
			return problem.InvalidField(f+".id", "want 1 to 16 letters or digits")
		case sections[s.ID]:
			return problem.InvalidField(f+".id", "section %q is declared twice", s.ID)
		case !classIDPattern.MatchString(s.Class):
			return problem.InvalidField(f+".class", classIDWant)
		case s.Rows < 1 || s.Rows > maxRowsPerSection:
			return problem.InvalidField(f+".rows", "want 1 to %d", maxRowsPerSection)
		case s.SeatsPerRow < 1 || s.SeatsPerRow > maxSeatsPerRow:
			return problem.InvalidField(f+".seats_per_row", "want 1 to %d", maxSeatsPerRow)
		}
		sections[s.ID] = true
		seatedClasses[s.Class] = true
		if total += s.Rows * s.SeatsPerRow; total > maxSeatsPerMap {
			return problem.InvalidField(f, "the seat map has more than %d seats", maxSeatsPerMap)
		}
	}
	gaClasses := map[string]bool{}
	for i, g := range l.GA {
		f := fmt.Sprintf("ga[%d]", i)
		switch {
		case !classIDPattern.MatchString(g.Class):
			return problem.InvalidField(f+".class", classIDWant)
		case gaClasses[g.Class]:
			return problem.InvalidField(f+".class", "class %q is declared twice", g.Class)
		case seatedClasses[g.Class]:
			// A class is either seated or counted: a hold by class must mean one thing.
			return problem.InvalidField(f+".class", "class %q is also a seated section's class", g.Class)
		case g.Capacity < 1 || g.Capacity > maxGACapacity:
			return problem.InvalidField(f+".capacity", "want 1 to %d", maxGACapacity)
		}
		gaClasses[g.Class] = true
	}
	return nil
}

// Seat is one numbered seat of a seat map.
type Seat struct {
	ID      string     `json:"id"`
	Section string     `json:"-"`
	Row     int        `json:"-"`
	Number  int        `json:"number"`
	Class   string     `json:"-"`
	Status  SeatStatus `json:"status"`
}

// SeatID is the id of a seat: "<section>-<row>-<number>", e.g. "A-3-12".
func SeatID(section string, row, number int) string {
	return section + "-" + strconv.Itoa(row) + "-" + strconv.Itoa(number)
}

// ParseSeatID splits a seat id into its section, row and number; ok is false when id is not
// of SeatID's form.
func ParseSeatID(id string) (section string, row, number int, ok bool) {
	parts := strings.Split(id, "-")
	if len(parts) != 3 || !sectionIDPattern.MatchString(parts[0]) {
		return "", 0, 0, false
	}
	row, err1 := strconv.Atoi(parts[1])
	number, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || row < 1 || number < 1 || strconv.Itoa(row) != parts[1] || strconv.Itoa(number) != parts[2] {
		return "", 0, 0, false
	}
	return parts[0], row, number, true
}

// CompareSeatIDs orders seat ids as a venue does: by section, then row and number as numbers
// ("A-1-2" before "A-1-10"). Ids that do not parse sort after those that do, as strings.
func CompareSeatIDs(a, b string) int {
	sa, ra, na, oka := ParseSeatID(a)
	sb, rb, nb, okb := ParseSeatID(b)
	switch {
	case oka && okb:
		return cmp.Or(strings.Compare(sa, sb), cmp.Compare(ra, rb), cmp.Compare(na, nb))
	case oka != okb:
		if oka {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// Seats lists every seat l declares, all available, in venue order.
func (l Layout) Seats() []Seat {
	var seats []Seat
	for _, s := range l.Sections {
		for r := 1; r <= s.Rows; r++ {
			for n := 1; n <= s.SeatsPerRow; n++ {
				seats = append(seats, Seat{ID: SeatID(s.ID, r, n), Section: s.ID, Row: r, Number: n, Class: s.Class, Status: SeatAvailable})
			}
		}
	}
	return seats
}

// HoldRequest asks to hold either named seats or Quantity tickets of a GA class.
type HoldRequest struct {
	EventID  string
	Account  string   // the owner; required
	Seats    []string // seated: these seats, all or none
	Class    string   // GA: this class…
	Quantity int      // …this many tickets
	Pass     string   // the waitroom's admission pass, required for flash-sale events

	// IdempotencyKey, optional, makes placing the hold safe to retry: the same account and
	// key return the hold the first request placed (see Store.PlaceHoldOnce). "" = none:
	// every request places a hold of its own.
	IdempotencyKey string
}

// IdempotencyKeyHeader is the HTTP header that carries HoldRequest.IdempotencyKey, as it
// carries an order's.
const IdempotencyKeyHeader = "Idempotency-Key"

// MaxKeyLen bounds idempotency keys.
const MaxKeyLen = 200

// Hash is the fingerprint of what r asks for, stored with its idempotency key: the same key
// with the same request replays the first hold, with another request it is refused. The
// pass is left out: a retry may carry a fresher pass for the same seats.
func (r HoldRequest) Hash() string {
	seats := slices.SortedFunc(slices.Values(r.Seats), CompareSeatIDs)
	sum := sha256.Sum256(fmt.Appendf(nil, "event_id=%s\nseats=%s\nclass=%s\nquantity=%d",
		r.EventID, strings.Join(seats, ","), r.Class, r.Quantity))
	return hex.EncodeToString(sum[:])
}

// Validate reports the first thing wrong with r, naming the field. Account is checked first
// because an anonymous caller should log in before fixing anything else.
func (r HoldRequest) Validate() error {
	if r.Account == "" {
		return problem.New(problem.Unauthorized, "holding seats needs a signed-in account")
	}
	if err := ValidateEventID("event_id", r.EventID); err != nil {
		return err
	}
	switch {
	case len(r.IdempotencyKey) > MaxKeyLen:
		return problem.InvalidField(IdempotencyKeyHeader, "want 1 to %d characters, unique per hold you mean to place", MaxKeyLen)
	case len(r.Seats) > 0 && (r.Class != "" || r.Quantity != 0):
		return problem.InvalidField("seats", "ask for seats or for a class and quantity, not both")
	case len(r.Seats) > MaxTicketsPerHold:
		return problem.InvalidField("seats", "want 1 to %d seats", MaxTicketsPerHold)
	case len(r.Seats) > 0:
		seen := map[string]bool{}
		for i, id := range r.Seats {
			if _, _, _, ok := ParseSeatID(id); !ok {
				return problem.InvalidField(fmt.Sprintf("seats[%d]", i), "want a seat id such as A-3-12")
			}
			if seen[id] {
				return problem.InvalidField(fmt.Sprintf("seats[%d]", i), "seat %s is listed twice", id)
			}
			seen[id] = true
		}
	case r.Class == "":
		return problem.InvalidField("seats", "want seats, or a class and quantity")
	case !classIDPattern.MatchString(r.Class):
		return problem.InvalidField("class", classIDWant)
	case r.Quantity < 1 || r.Quantity > MaxTicketsPerHold:
		return problem.InvalidField("quantity", "want 1 to %d", MaxTicketsPerHold)
	}
	return nil
}

// CheckAdmission verifies that token is a waitroom pass admitting user to event at now.
// A nil key means this process cannot verify passes: flash-sale holds are refused as
// unavailable rather than let through, since the queue is the whole point of a flash sale.
func CheckAdmission(key ed25519.PublicKey, token string, now time.Time, event, user string) error {
	if key == nil {
		return problem.New(problem.Unavailable, "flash-sale holds are disabled: no waitroom public key is configured")
	}
	if token == "" {
		return problem.New(problem.Forbidden, "this is a flash sale: join the waiting room and send its admission pass")
	}
	if _, err := pass.Check(key, token, now, event, user); err != nil {
		msg := "the admission pass is not valid"
		switch {
		case errors.Is(err, pass.ErrExpired):
			msg = "the admission pass has expired: join the waiting room again"
		case errors.Is(err, pass.ErrWrongHolder):
			msg = "the admission pass was issued for another event or account"
		}
		return &problem.Error{Code: problem.Forbidden, Message: msg, Err: err}
	}
	return nil
}

// SaleWindow is when an event's tickets may be held, as the catalog says: from Opens (its
// on_sale_at) until Starts (its starts_at). A zero bound does not restrict, so the zero
// SaleWindow is always on sale: that is the window of a map stored before inventory knew the
// catalog's, or declared by an admin for an event the catalog never announced.
type SaleWindow struct {
	Opens  time.Time
	Starts time.Time
}

// Check says whether tickets of event may be held at now: from Opens on (Opens itself
// included) and before Starts. Outside, the answer is Unprocessable, a request that is well
// formed but not allowed now, rather than Conflict, which tells a fan the seats are taken
// and to pick others; before the sale it says when the sale opens.
func (w SaleWindow) Check(now time.Time, event string) error {
	var refused *problem.Error
	switch {
	case !w.Opens.IsZero() && now.Before(w.Opens):
		refused = problem.New(problem.Unprocessable, "tickets of event %s are not on sale yet: the sale opens at %s",
			event, w.Opens.UTC().Format(time.RFC3339Nano))
	case !w.Starts.IsZero() && !now.Before(w.Starts):
		refused = problem.New(problem.Unprocessable, "event %s has started: its tickets are no longer on sale", event)
	default:
		return nil
	}
	refused.Err = ErrNotOnSale
	return refused
}

// The refusals of SaleWindow.Check and CheckAccountCap, which answer alike (Unprocessable):
// errors.Is tells them apart, for the refused-holds metric's reason.
var (
	ErrNotOnSale  = errors.New("not on sale")
	ErrAccountCap = errors.New("over the account's cap")
)

// CheckAccountCap says whether an account already holding held tickets of event, across its
// active holds, may hold asked more when it may hold at most limit at a time; over the cap it
// answers Unprocessable wrapping ErrAccountCap. Only active holds count: an account that
// bought its cap may hold again (a cap on buying would be another rule).
func CheckAccountCap(held, asked, limit int, event string) error {
	if held+asked <= limit {
		return nil
	}
	refused := problem.New(problem.Unprocessable,
		"the account holds %d tickets of event %s and may hold at most %d at a time; this hold asks for %d more (order or release a hold first)",
		held, event, limit, asked)
	refused.Err = ErrAccountCap
	return refused
}

// Hold is a set of tickets an account keeps for itself until ExpiresAt, then confirms
// (sold) or gives back. Seated holds list Seats; GA holds name Class. Quantity counts the
// tickets either way, and Tickets counts them per class so an order can price them.
type Hold struct {
	ID        string        `json:"id"`
	EventID   string        `json:"event_id"`
	Account   string        `json:"account"`
	Status    HoldStatus    `json:"status"`
	Seats     []string      `json:"seats,omitempty"`
	Class     string        `json:"class,omitempty"`
	Quantity  int           `json:"quantity"`
	Tickets   []TicketCount `json:"tickets"`
	CreatedAt time.Time     `json:"created_at"`
	ExpiresAt time.Time     `json:"expires_at"`
}

// TicketCount is how many tickets of one class a hold has.
type TicketCount struct {
	Class    string `json:"class"`
	Quantity int    `json:"quantity"`
}

// Due reports whether an active hold has run out of time at now and awaits the sweeper.
func (h Hold) Due(now time.Time) bool { return h.Status == HoldActive && !now.Before(h.ExpiresAt) }

// CanConfirm says whether h may be confirmed at now. A confirmed hold may be confirmed
// again (the caller returns it unchanged): confirming is idempotent so an order saga can
// retry after a lost answer.
func (h Hold) CanConfirm(now time.Time) error {
	switch {
	case h.Status == HoldConfirmed:
		return nil
	case h.Status == HoldReleased:
		return problem.New(problem.Gone, "hold %s was released", h.ID)
	case h.Status == HoldExpired || h.Due(now):
		return problem.New(problem.Gone, "hold %s expired at %s", h.ID, h.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// CanRelease says whether h may be released. Releasing a released or expired hold is a no-op
// (idempotent, like DELETE); a confirmed hold's seats are sold and stay sold.
func (h Hold) CanRelease() error {
	if h.Status == HoldConfirmed {
		return problem.New(problem.Conflict, "hold %s is confirmed: its seats are sold", h.ID)
	}
	return nil
}

// CheckOwner allows account to act on h. An empty account is a trusted service-to-service
// call (an order saga resuming without its user); a different one is refused.
func (h Hold) CheckOwner(account string) error {
	if account != "" && account != h.Account {
		return problem.New(problem.Forbidden, "hold %s belongs to another account", h.ID)
	}
	return nil
}

// Counts sums an event's tickets by state.
type Counts struct {
	Total     int `json:"total"`
	Available int `json:"available"`
	Held      int `json:"held"`
	Sold      int `json:"sold"`
}

// Add returns c plus o.
func (c Counts) Add(o Counts) Counts {
	return Counts{Total: c.Total + o.Total, Available: c.Available + o.Available, Held: c.Held + o.Held, Sold: c.Sold + o.Sold}
}

// Level is a coarse availability a feed can show without numbers.
type Level string

// The availability levels.
const (
	LevelAvailable Level = "available"
	LevelLimited   Level = "limited"  // a tenth or less left: "hurry"
	LevelSoldOut   Level = "sold_out" // nothing available (some may come back when holds expire)
	LevelUnknown   Level = "unknown"  // no seat map for this event
)

// Level grades c: sold out with nothing available, limited with a tenth or less left.
func (c Counts) Level() Level {
	switch {
	case c.Total == 0:
		return LevelUnknown
	case c.Available <= 0:
		return LevelSoldOut
	case c.Available*10 <= c.Total:
		return LevelLimited
	}
	return LevelAvailable
}

// SeatMap is an event's seat map as served: every seat with its status and every GA class
// with its counts.
type SeatMap struct {
	EventID   string           `json:"event_id"`
	FlashSale bool             `json:"flash_sale"`
	Sections  []Section        `json:"sections"`
	GA        []GAAvailability `json:"ga"`
	Counts    Counts           `json:"counts"`
}

// Section is a seated section and its rows, as served.
type Section struct {
	ID    string `json:"id"`
	Class string `json:"class"`
	Rows  []Row  `json:"rows"`
}

// Row is one row of a section, as served.
type Row struct {
	Label string `json:"label"`
	Seats []Seat `json:"seats"`
}

// GAAvailability is a GA class and how many of its tickets are in each state.
type GAAvailability struct {
	Class string `json:"class"`
	Counts
}

// buildSeatMap groups seats, given in venue order (sections as declared, then rows and
// numbers), into sections and rows and sums the counts.
func buildSeatMap(eventID string, flashSale bool, seats []Seat, ga []GAAvailability) SeatMap {
	m := SeatMap{EventID: eventID, FlashSale: flashSale, Sections: []Section{}, GA: ga}
	if m.GA == nil {
		m.GA = []GAAvailability{} // JSON [] rather than null: clients iterate without a check
	}
	for _, s := range seats {
		if n := len(m.Sections); n == 0 || m.Sections[n-1].ID != s.Section {
			m.Sections = append(m.Sections, Section{ID: s.Section, Class: s.Class})
		}
		sec := &m.Sections[len(m.Sections)-1]
		label := strconv.Itoa(s.Row)
		if n := len(sec.Rows); n == 0 || sec.Rows[n-1].Label != label {
			sec.Rows = append(sec.Rows, Row{Label: label})
		}
		row := &sec.Rows[len(sec.Rows)-1]
		row.Seats = append(row.Seats, s)
		m.Counts = m.Counts.Add(seatCounts(s.Status, 1))
	}
	for _, g := range ga {
		m.Counts = m.Counts.Add(g.Counts)
	}
	return m
}

// seatCounts is n seats of status s as Counts.
func seatCounts(s SeatStatus, n int) Counts {
	switch s {
	case SeatHeld:
		return Counts{Total: n, Held: n}
	case SeatSold:
		return Counts{Total: n, Sold: n}
	}
	return Counts{Total: n, Available: n}
}
