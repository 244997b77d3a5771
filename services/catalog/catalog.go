// Package catalog is BoxOffice's catalog: venues, events, performers, ticket classes and
// prices. It is read-heavy: fans browse and filter events, the BFFs batch-read them over
// gRPC, and every change is announced on JetStream (boxoffice.catalog.event.created and
// .updated, stream CATALOG) for read models such as search.
//
// This file holds the domain types and their rules, with no I/O.
package catalog

import (
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

// TicketClass is one kind of ticket of an event and its price.
type TicketClass struct {
	ID       string      `json:"id"`
	Name     string      `json:"name"`
	Price    money.Money `json:"price"`
	Seated   bool        `json:"seated"`   // picked on a seat map; otherwise general admission
	Capacity int         `json:"capacity"` // how many tickets of this class exist
}

// Event is something fans buy tickets for. City and Country are the venue's, copied when the
// event is written so that lists and filters need no join.
type Event struct {
	ID            string        `json:"id"`
	Title         string        `json:"title"`
	Description   string        `json:"description"`
	Performers    []string      `json:"performers"`
	VenueID       string        `json:"venue_id"`
	StartsAt      time.Time     `json:"starts_at"`
	OnSaleAt      time.Time     `json:"on_sale_at"`
	FlashSale     bool          `json:"flash_sale"`
	ImageURL      string        `json:"image_url"`
	TicketClasses []TicketClass `json:"ticket_classes"`
	City          string        `json:"city"`
	Country       string        `json:"country"`
	Tags          []string      `json:"tags"`
	// Version grows by one with every change, so a read model fed by events out of order
	// keeps the newest.
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Section summarises one part of a venue; the seat map itself belongs to inventory.
type Section struct {
	Name     string `json:"name"`
	Capacity int    `json:"capacity"`
	Seated   bool   `json:"seated"`
}

// Venue is where events happen.
type Venue struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	City     string    `json:"city"`
	Country  string    `json:"country"`
	Address  string    `json:"address"`
	Capacity int       `json:"capacity"`
	Sections []Section `json:"sections"`
}

// Limits on what an admin may write; generous for real data, small enough to keep a list
// page and an event message a few kilobytes.
const (
	maxTitle       = 200
	maxDescription = 5000
	maxListItems   = 20
	maxTicketClass = 20
	maxCapacity    = 1_000_000
	maxNameLength  = 120
	maxPriceMinor  = 100_000_000 // one million in major units
	maxIDLength    = 64
)

// Validate checks an event as an admin wrote it and returns an Invalid problem naming the
// first field at fault. The venue's existence and the copied city are the store's concern.
func (e Event) Validate() error {
	switch {
	case e.ID != "" && !validID(e.ID):
		return problem.InvalidField("id", "use 1 to %d letters, digits, '-' or '_'", maxIDLength)
	case strings.TrimSpace(e.Title) == "":
		return problem.InvalidField("title", "is required")
	case utf8.RuneCountInString(e.Title) > maxTitle:
		return problem.InvalidField("title", "is longer than %d characters", maxTitle)
	case utf8.RuneCountInString(e.Description) > maxDescription:
		return problem.InvalidField("description", "is longer than %d characters", maxDescription)
	case e.VenueID == "":
		return problem.InvalidField("venue_id", "is required")
	case e.StartsAt.IsZero():
		return problem.InvalidField("starts_at", "is required")
	case e.OnSaleAt.IsZero():
		return problem.InvalidField("on_sale_at", "is required")
	case e.OnSaleAt.After(e.StartsAt):
		return problem.InvalidField("on_sale_at", "is after starts_at")
	case e.ImageURL != "" && !validURL(e.ImageURL):
		return problem.InvalidField("image_url", "is not an absolute http(s) URL")
	}
	if err := validNames("performers", e.Performers); err != nil {
		return err
	}
	if err := validNames("tags", e.Tags); err != nil {
		return err
	}
	return validTicketClasses(e.TicketClasses)
}

func validTicketClasses(classes []TicketClass) error {
	if len(classes) == 0 {
		return problem.InvalidField("ticket_classes", "at least one is required")
	}
	if len(classes) > maxTicketClass {
		return problem.InvalidField("ticket_classes", "at most %d", maxTicketClass)
	}
	seen := map[string]bool{}
	for _, c := range classes {
		switch {
		case !validID(c.ID):
			return problem.InvalidField("ticket_classes.id", "use 1 to %d letters, digits, '-' or '_'", maxIDLength)
		case seen[c.ID]:
			return problem.InvalidField("ticket_classes.id", "%q appears twice", c.ID)
		case strings.TrimSpace(c.Name) == "" || utf8.RuneCountInString(c.Name) > maxNameLength:
			return problem.InvalidField("ticket_classes.name", "is required, at most %d characters", maxNameLength)
		case !validCurrency(c.Price.Currency):
			return problem.InvalidField("ticket_classes.price.currency", "want an ISO 4217 code such as BRL")
		case c.Price.Currency != classes[0].Price.Currency:
			return problem.InvalidField("ticket_classes.price.currency", "every class of an event uses one currency")
		case c.Price.Minor < 0 || c.Price.Minor > maxPriceMinor:
			return problem.InvalidField("ticket_classes.price.minor", "want 0 to %d", maxPriceMinor)
		case c.Capacity < 1 || c.Capacity > maxCapacity:
			return problem.InvalidField("ticket_classes.capacity", "want 1 to %d", maxCapacity)
		}
		seen[c.ID] = true
	}
	return nil
}

// Validate checks a venue as an admin wrote it.
func (v Venue) Validate() error {
	switch {
	case v.ID != "" && !validID(v.ID):
		return problem.InvalidField("id", "use 1 to %d letters, digits, '-' or '_'", maxIDLength)
	case strings.TrimSpace(v.Name) == "" || utf8.RuneCountInString(v.Name) > maxNameLength:
		return problem.InvalidField("name", "is required, at most %d characters", maxNameLength)
	case strings.TrimSpace(v.City) == "" || utf8.RuneCountInString(v.City) > maxNameLength:
		return problem.InvalidField("city", "is required, at most %d characters", maxNameLength)
	case !validCountry(v.Country):
		return problem.InvalidField("country", "want an ISO 3166-1 alpha-2 code such as BR")
	case utf8.RuneCountInString(v.Address) > 2*maxNameLength:
		return problem.InvalidField("address", "is longer than %d characters", 2*maxNameLength)
	case v.Capacity < 1 || v.Capacity > maxCapacity:
		return problem.InvalidField("capacity", "want 1 to %d", maxCapacity)
	case len(v.Sections) > maxListItems:
		return problem.InvalidField("sections", "at most %d", maxListItems)
	}
	for _, s := range v.Sections {
		if strings.TrimSpace(s.Name) == "" || s.Capacity < 1 || s.Capacity > v.Capacity {
			return problem.InvalidField("sections", "each needs a name and a capacity from 1 to the venue's")
		}
	}
	return nil
}

// MinPrice is the price of the event's cheapest ticket class; zero Money without classes.
func (e Event) MinPrice() money.Money {
	if len(e.TicketClasses) == 0 {
		return money.Money{}
	}
	return slices.MinFunc(e.TicketClasses, func(a, b TicketClass) int {
		return int(a.Price.Minor - b.Price.Minor)
	}).Price
}

// EventPatch is a partial update of an event: nil fields stay as they are. A list replaces
// the whole list.
type EventPatch struct {
	Title         *string        `json:"title"`
	Description   *string        `json:"description"`
	Performers    *[]string      `json:"performers"`
	VenueID       *string        `json:"venue_id"`
	StartsAt      *time.Time     `json:"starts_at"`
	OnSaleAt      *time.Time     `json:"on_sale_at"`
	FlashSale     *bool          `json:"flash_sale"`
	ImageURL      *string        `json:"image_url"`
	TicketClasses *[]TicketClass `json:"ticket_classes"`
	Tags          *[]string      `json:"tags"`
}

// Apply returns e with p's fields set, validated. The caller bumps Version and copies the
// venue's city when VenueID changed.
func (e Event) Apply(p EventPatch) (Event, error) {
	set(&e.Title, p.Title)
	set(&e.Description, p.Description)
	set(&e.Performers, p.Performers)
	set(&e.VenueID, p.VenueID)
	set(&e.StartsAt, p.StartsAt)
	set(&e.OnSaleAt, p.OnSaleAt)
	set(&e.FlashSale, p.FlashSale)
	set(&e.ImageURL, p.ImageURL)
	set(&e.TicketClasses, p.TicketClasses)
	set(&e.Tags, p.Tags)
	return e, e.Validate()
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Filter narrows a list of events; zero fields do not filter. Text matches ignore case and
// accents.
type Filter struct {
	City      string
	From      time.Time // starts at or after
	To        time.Time // starts before
	Query     string    // a substring of the title
	Performer string    // a substring of a performer's name
	MaxPrice  int64     // the cheapest ticket costs at most this many minor units; 0 = any
	Tag       string
}

// Validate rejects a filter no event could match because it contradicts itself.
func (f Filter) Validate() error {
	switch {
	case f.MaxPrice < 0:
		return problem.InvalidField("max_price", "want a non-negative amount in minor units")
	case !f.From.IsZero() && !f.To.IsZero() && !f.To.After(f.From):
		return problem.InvalidField("to", "is not after from")
	}
	return nil
}

// Fold returns s lower-cased, without accents and with runs of space made one, the form
// in which text is stored for matching: "  São  Paulo" and "sao paulo" fold alike.
func Fold(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	folded, _, err := transform.String(t, s)
	if err != nil {
		folded = s // only on invalid UTF-8, which JSON decoding has already replaced
	}
	return strings.Join(strings.Fields(strings.ToLower(folded)), " ")
}

func validID(s string) bool {
	if s == "" || len(s) > maxIDLength {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func validNames(field string, names []string) error {
	if len(names) > maxListItems {
		return problem.InvalidField(field, "at most %d", maxListItems)
	}
	for _, n := range names {
		if strings.TrimSpace(n) == "" || utf8.RuneCountInString(n) > maxNameLength {
			return problem.InvalidField(field, "each must be 1 to %d characters", maxNameLength)
		}
	}
	return nil
}

func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

func validCurrency(s string) bool { return len(s) == 3 && isUpper(s) }

func validCountry(s string) bool { return len(s) == 2 && isUpper(s) }

func isUpper(s string) bool {
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}
