package inventory

import (
	"reflect"
	"testing"
	"time"

	"boxoffice.dev/services/catalog"
)

func TestDefaultLayout(t *testing.T) {
	sec := func(id, class string, rows, per int) SectionLayout {
		return SectionLayout{ID: id, Class: class, Rows: rows, SeatsPerRow: per}
	}
	tests := []struct {
		name    string
		classes []TicketClass
		want    Layout
	}{
		{"arena: GA floor and a seated tier", []TicketClass{{"class-1", false, 1600}, {"class-2", true, 800}},
			Layout{Sections: []SectionLayout{sec("A", "class-2", 40, 20)}, GA: []GAClass{{"class-1", 1600}}}},
		{"fado house: 220 in rows of 20", []TicketClass{{"class-1", true, 220}},
			Layout{Sections: []SectionLayout{sec("A", "class-1", 11, 20)}}},
		{"the nearest row length that divides", []TicketClass{{"class-1", true, 250}, {"class-2", true, 100}},
			Layout{Sections: []SectionLayout{sec("A", "class-1", 10, 25), sec("B", "class-2", 5, 20)}}},
		{"flash sale", []TicketClass{{"plateia", true, 200}, {"balcao", true, 100}},
			Layout{Sections: []SectionLayout{sec("A", "plateia", 10, 20), sec("B", "balcao", 5, 20)}}},
		{"a prime capacity: rows of 20 and a shorter row", []TicketClass{{"c", true, 37}},
			Layout{Sections: []SectionLayout{sec("A", "c", 1, 20), sec("B", "c", 1, 17)}}},
		{"fewer seats than a row", []TicketClass{{"box", true, 7}},
			Layout{Sections: []SectionLayout{sec("A", "box", 1, 7)}}},
		{"too many rows for one section", []TicketClass{{"stand", true, 10_003}},
			Layout{Sections: []SectionLayout{sec("A", "stand", 200, 20), sec("B", "stand", 200, 20), sec("C", "stand", 100, 20), sec("D", "stand", 1, 3)}}},
		{"upper-case class ids, as the catalog allows", []TicketClass{{"VIP_Lounge", false, 30}},
			Layout{GA: []GAClass{{"VIP_Lounge", 30}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DefaultLayout(tt.classes)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DefaultLayout(%v) = %+v, want %+v", tt.classes, got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("DefaultLayout(%v) is invalid: %v", tt.classes, err)
			}
			if got, want := ticketsOf(got), capacityOf(tt.classes); got != want {
				t.Errorf("DefaultLayout(%v) has %d tickets, want the classes' %d", tt.classes, got, want)
			}
		})
	}
}

func TestDefaultLayoutOfClassesInventoryCannotHold(t *testing.T) {
	tests := []struct {
		name    string
		classes []TicketClass
		field   string
	}{
		{"no classes", nil, "sections"},
		{"no seats in a seated class", []TicketClass{{"c", true, 0}}, "sections[0].rows"},
		{"no tickets in a GA class", []TicketClass{{"c", false, 0}}, "ga[0].capacity"},
		{"a class id with a space", []TicketClass{{"c 1", true, 10}}, "sections[0].class"},
		{"more seats than a map holds", []TicketClass{{"c", true, 100_001}}, "sections[25]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertField(t, "DefaultLayout(…).Validate()", DefaultLayout(tt.classes).Validate(), tt.field)
		})
	}
}

// TestEveryDemoEventLaysOut holds the rule to the catalog's demo: every event gets a valid
// map with exactly its classes' tickets, the flash sale one that needs passes.
func TestEveryDemoEventLaysOut(t *testing.T) {
	demo := catalog.DemoCatalog(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	for _, e := range demo.Events {
		var classes []TicketClass
		for _, c := range e.TicketClasses {
			classes = append(classes, TicketClass{ID: c.ID, Seated: c.Seated, Capacity: c.Capacity})
		}
		l := DefaultLayout(classes)
		if err := l.Validate(); err != nil {
			t.Errorf("DefaultLayout(%s) is invalid: %v", e.ID, err)
		}
		if got, want := ticketsOf(l), capacityOf(classes); got != want {
			t.Errorf("DefaultLayout(%s) has %d tickets, want %d", e.ID, got, want)
		}
	}
}

func TestSectionName(t *testing.T) {
	tests := map[int]string{0: "A", 1: "B", 25: "Z", 26: "AA", 27: "AB", 51: "AZ", 52: "BA", 701: "ZZ", 702: "AAA"}
	for i, want := range tests {
		if got := sectionName(i); got != want {
			t.Errorf("sectionName(%d) = %q, want %q", i, got, want)
		}
	}
}

// ticketsOf counts the seats and GA tickets l declares.
func ticketsOf(l Layout) int {
	n := len(l.Seats())
	for _, g := range l.GA {
		n += g.Capacity
	}
	return n
}

func capacityOf(classes []TicketClass) int {
	n := 0
	for _, c := range classes {
		n += c.Capacity
	}
	return n
}
