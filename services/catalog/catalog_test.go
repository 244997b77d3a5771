package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

var t0 = time.Date(2030, 5, 10, 12, 0, 0, 0, time.UTC)

func validEvent() Event {
	return Event{
		ID: "evt-x", Title: "Show", VenueID: "ven-1",
		StartsAt: t0.Add(48 * time.Hour), OnSaleAt: t0,
		TicketClasses: []TicketClass{{ID: "ga", Name: "Pista", Price: money.Money{Currency: "BRL", Minor: 12000}, Capacity: 100}},
	}
}

func TestEventValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(e *Event)
		field string // "" = valid
	}{
		{"valid", func(e *Event) {}, ""},
		{"no id is fine", func(e *Event) { e.ID = "" }, ""},
		{"bad id", func(e *Event) { e.ID = "evt 1" }, "id"},
		{"blank title", func(e *Event) { e.Title = "  " }, "title"},
		{"long title", func(e *Event) { e.Title = strings.Repeat("é", maxTitle+1) }, "title"},
		{"longest description", func(e *Event) { e.Description = strings.Repeat("é", maxDescription) }, ""},
		{"long description", func(e *Event) { e.Description = strings.Repeat("é", maxDescription+1) }, "description"},
		{"no venue", func(e *Event) { e.VenueID = "" }, "venue_id"},
		{"no start", func(e *Event) { e.StartsAt = time.Time{} }, "starts_at"},
		{"no on-sale time", func(e *Event) { e.OnSaleAt = time.Time{} }, "on_sale_at"},
		{"on sale after start", func(e *Event) { e.OnSaleAt = e.StartsAt.Add(time.Minute) }, "on_sale_at"},
		{"relative image url", func(e *Event) { e.ImageURL = "/img.png" }, "image_url"},
		{"blank performer", func(e *Event) { e.Performers = []string{""} }, "performers"},
		{"most performers", func(e *Event) { e.Performers = names("Band", maxListItems) }, ""},
		{"too many performers", func(e *Event) { e.Performers = names("Band", maxListItems+1) }, "performers"},
		{"too many tags", func(e *Event) { e.Tags = names("tag", maxListItems+1) }, "tags"},
		{"no classes", func(e *Event) { e.TicketClasses = nil }, "ticket_classes"},
		{"most classes", func(e *Event) { e.TicketClasses = ticketClasses(maxTicketClass) }, ""},
		{"too many classes", func(e *Event) { e.TicketClasses = ticketClasses(maxTicketClass + 1) }, "ticket_classes"},
		{"bad class id", func(e *Event) { e.TicketClasses[0].ID = "ga 1" }, "ticket_classes.id"},
		{"long class id", func(e *Event) { e.TicketClasses[0].ID = strings.Repeat("a", maxIDLength+1) }, "ticket_classes.id"},
		{"blank class name", func(e *Event) { e.TicketClasses[0].Name = " " }, "ticket_classes.name"},
		{"long class name", func(e *Event) { e.TicketClasses[0].Name = strings.Repeat("é", maxNameLength+1) }, "ticket_classes.name"},
		{"duplicate class", func(e *Event) { e.TicketClasses = append(e.TicketClasses, e.TicketClasses[0]) }, "ticket_classes.id"},
		{"lower-case currency", func(e *Event) { e.TicketClasses[0].Price.Currency = "brl" }, "ticket_classes.price.currency"},
		{"mixed currencies", func(e *Event) {
			e.TicketClasses = append(e.TicketClasses, TicketClass{ID: "vip", Name: "VIP", Price: money.Money{Currency: "EUR", Minor: 1}, Capacity: 1})
		}, "ticket_classes.price.currency"},
		{"negative price", func(e *Event) { e.TicketClasses[0].Price.Minor = -1 }, "ticket_classes.price.minor"},
		{"zero capacity", func(e *Event) { e.TicketClasses[0].Capacity = 0 }, "ticket_classes.capacity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := validEvent()
			tt.edit(&e)
			assertField(t, "Validate()", e.Validate(), tt.field)
		})
	}
}

func TestVenueValidate(t *testing.T) {
	valid := Venue{Name: "Sala", City: "Lisboa", Country: "PT", Capacity: 100, Sections: []Section{{"Plateia", 100, true}}}
	tests := []struct {
		name  string
		edit  func(v *Venue)
		field string
	}{
		{"valid", func(v *Venue) {}, ""},
		{"no id is fine", func(v *Venue) { v.ID = "" }, ""},
		{"longest id", func(v *Venue) { v.ID = strings.Repeat("v", maxIDLength) }, ""},
		{"bad id", func(v *Venue) { v.ID = "ven/1" }, "id"},
		{"long id", func(v *Venue) { v.ID = strings.Repeat("v", maxIDLength+1) }, "id"},
		{"no name", func(v *Venue) { v.Name = "" }, "name"},
		{"no city", func(v *Venue) { v.City = "" }, "city"},
		{"country name instead of code", func(v *Venue) { v.Country = "Portugal" }, "country"},
		{"longest address", func(v *Venue) { v.Address = strings.Repeat("é", 2*maxNameLength) }, ""},
		{"long address", func(v *Venue) { v.Address = strings.Repeat("é", 2*maxNameLength+1) }, "address"},
		{"no capacity", func(v *Venue) { v.Capacity = 0 }, "capacity"},
		{"most sections", func(v *Venue) { v.Sections = sections(maxListItems) }, ""},
		{"too many sections", func(v *Venue) { v.Sections = sections(maxListItems + 1) }, "sections"},
		{"section larger than venue", func(v *Venue) { v.Sections[0].Capacity = 101 }, "sections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := valid
			v.Sections = append([]Section(nil), valid.Sections...)
			tt.edit(&v)
			assertField(t, "Validate()", v.Validate(), tt.field)
		})
	}
}

func TestFilterValidate(t *testing.T) {
	tests := []struct {
		name  string
		f     Filter
		field string
	}{
		{"no filter", Filter{}, ""},
		{"free events only", Filter{MaxPrice: 0}, ""},
		{"negative max price", Filter{MaxPrice: -1}, "max_price"},
		{"from only", Filter{From: t0}, ""},
		{"to only", Filter{To: t0}, ""},
		{"to after from", Filter{From: t0, To: t0.Add(time.Second)}, ""},
		{"to equals from", Filter{From: t0, To: t0}, "to"},
		{"to before from", Filter{From: t0, To: t0.Add(-time.Hour)}, "to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertField(t, fmt.Sprintf("%+v.Validate()", tt.f), tt.f.Validate(), tt.field)
		})
	}
}

// names returns n distinct valid names starting with prefix.
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %d", prefix, i)
	}
	return out
}

// ticketClasses returns n valid classes with distinct ids, all in one currency.
func ticketClasses(n int) []TicketClass {
	out := make([]TicketClass, n)
	for i := range out {
		out[i] = TicketClass{ID: fmt.Sprintf("c%d", i), Name: fmt.Sprintf("Class %d", i), Price: money.Money{Currency: "BRL", Minor: 1000}, Capacity: 10}
	}
	return out
}

// sections returns n valid sections, each small enough for the 100-seat venue of TestVenueValidate.
func sections(n int) []Section {
	out := make([]Section, n)
	for i := range out {
		out[i] = Section{Name: fmt.Sprintf("Section %d", i), Capacity: 5}
	}
	return out
}

func TestEventApply(t *testing.T) {
	title := "New title"
	later := t0.Add(72 * time.Hour)
	early := t0.Add(-time.Hour)
	tests := []struct {
		name  string
		patch EventPatch
		check func(e Event) bool
		field string
	}{
		{"empty patch changes nothing", EventPatch{}, func(e Event) bool { return e.Title == "Show" }, ""},
		{"title", EventPatch{Title: &title}, func(e Event) bool { return e.Title == title && e.VenueID == "ven-1" }, ""},
		{"start moves, on-sale stays", EventPatch{StartsAt: &later}, func(e Event) bool { return e.StartsAt.Equal(later) && e.OnSaleAt.Equal(t0) }, ""},
		{"start before on-sale is refused", EventPatch{StartsAt: &early}, nil, "on_sale_at"},
		{"classes replaced whole", EventPatch{TicketClasses: &[]TicketClass{}}, nil, "ticket_classes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := validEvent().Apply(tt.patch)
			assertField(t, "Apply()", err, tt.field)
			if err == nil && !tt.check(got) {
				t.Errorf("Apply(%+v) = %+v", tt.patch, got)
			}
		})
	}
}

func TestFold(t *testing.T) {
	tests := []struct{ in, want string }{
		{"São Paulo", "sao paulo"},
		{"  SAO   paulo ", "sao paulo"},
		{"Görlitzer Ufer", "gorlitzer ufer"},
		{"Forró", "forro"},
		{"Eléctrico", "electrico"},
		{"Özlem Şahin", "ozlem sahin"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Fold(tt.in); got != tt.want {
			t.Errorf("Fold(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMinPrice(t *testing.T) {
	e := validEvent()
	e.TicketClasses = []TicketClass{
		{ID: "a", Price: money.Money{Currency: "EUR", Minor: 5000}}, {ID: "b", Price: money.Money{Currency: "EUR", Minor: 2500}}, {ID: "c", Price: money.Money{Currency: "EUR", Minor: 9000}},
	}
	if got := e.MinPrice(); got != (money.Money{Currency: "EUR", Minor: 2500}) {
		t.Errorf("MinPrice() = %v, want EUR 2500", got)
	}
	if got := (Event{}).MinPrice(); got != (money.Money{}) {
		t.Errorf("MinPrice() without classes = %v, want zero", got)
	}
}

func TestDemoCatalog(t *testing.T) {
	d := DemoCatalog(t0)
	if again := DemoCatalog(t0.Add(3 * time.Hour)); len(again.Events) != len(d.Events) || !again.Events[7].StartsAt.Equal(d.Events[7].StartsAt) {
		t.Errorf("DemoCatalog is not the same for the same day")
	}
	venues := map[string]Venue{}
	for _, v := range d.Venues {
		if err := v.Validate(); err != nil {
			t.Errorf("demo venue %s: %v", v.ID, err)
		}
		venues[v.ID] = v
	}
	if len(d.Events) != 41 || d.Events[0].ID != "evt-001" || d.Events[39].ID != "evt-040" {
		t.Fatalf("DemoCatalog has %d events from %s, want evt-001…evt-040 and the flash sale", len(d.Events), d.Events[0].ID)
	}
	flash := 0
	for _, e := range d.Events {
		if err := e.Validate(); err != nil {
			t.Errorf("demo event %s: %v", e.ID, err)
		}
		if v, ok := venues[e.VenueID]; !ok || v.City != e.City {
			t.Errorf("demo event %s is in %q at venue %q, want a demo venue's city", e.ID, e.City, e.VenueID)
		}
		if !e.StartsAt.After(t0) || e.StartsAt.After(t0.AddDate(0, 0, 60)) {
			t.Errorf("demo event %s starts %v, want within the coming eight weeks of %v", e.ID, e.StartsAt, t0)
		}
		if e.FlashSale {
			flash++
			seats := 0
			for _, c := range e.TicketClasses {
				seats += c.Capacity
			}
			if e.ID != DemoFlashSaleID || seats < 200 || seats > 900 {
				t.Errorf("flash sale %s has %d seats, want %s with a few hundred", e.ID, seats, DemoFlashSaleID)
			}
		}
	}
	if flash != 1 {
		t.Errorf("demo has %d flash-sale events, want exactly 1", flash)
	}
	// East of UTC the local date runs ahead of UTC's; every demo sale must still be open.
	east := time.Date(2026, 6, 2, 1, 0, 0, 0, time.FixedZone("UTC+14", 14*3600))
	for _, e := range DemoCatalog(east).Events {
		if e.OnSaleAt.After(east) {
			t.Errorf("DemoCatalog(%v): %s goes on sale at %v, want already on sale", east, e.ID, e.OnSaleAt)
		}
	}
}

// assertField checks err is nil when field is "", else an Invalid problem naming field.
func assertField(t *testing.T, call string, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("%s = %v, want nil", call, err)
		}
		return
	}
	var p *problem.Error
	if !errors.As(err, &p) || p.Code != problem.Invalid || p.Field != field {
		t.Errorf("%s = %v, want an invalid %q", call, err, field)
	}
}
