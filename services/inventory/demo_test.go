package inventory

import (
	"context"
	"reflect"
	"testing"

	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
)

// demoEvents mirrors the catalog's demo shapes: an arena (GA floor + seated tier), a
// theatre (two seated classes), a fado house (220 seats) and the 300-seat flash sale.
var demoEvents = []DemoEvent{
	{EventID: "evt-001", Classes: []DemoClass{{"class-1", false, 1600}, {"class-2", true, 800}}},
	{EventID: "evt-002", Classes: []DemoClass{{"class-1", true, 400}, {"class-2", true, 200}}},
	{EventID: "evt-008", Classes: []DemoClass{{"class-1", true, 220}}},
	{EventID: "evt-015", Classes: []DemoClass{{"class-1", true, 250}, {"class-2", true, 100}}},
	{EventID: "evt-flash", FlashSale: true, Classes: []DemoClass{{"plateia", true, 200}, {"balcao", true, 100}}},
}

func TestDemoLayout(t *testing.T) {
	tests := []struct {
		event DemoEvent
		want  Layout
	}{
		{demoEvents[0], Layout{
			Sections: []SectionLayout{{ID: "A", Class: "class-2", Rows: 40, SeatsPerRow: 20}},
			GA:       []GAClass{{Class: "class-1", Capacity: 1600}},
		}},
		{demoEvents[2], Layout{Sections: []SectionLayout{{ID: "A", Class: "class-1", Rows: 11, SeatsPerRow: 20}}}},
		{demoEvents[3], Layout{Sections: []SectionLayout{
			{ID: "A", Class: "class-1", Rows: 10, SeatsPerRow: 25},
			{ID: "B", Class: "class-2", Rows: 5, SeatsPerRow: 20},
		}}},
		{demoEvents[4], Layout{FlashSale: true, Sections: []SectionLayout{
			{ID: "A", Class: "plateia", Rows: 10, SeatsPerRow: 20},
			{ID: "B", Class: "balcao", Rows: 5, SeatsPerRow: 20},
		}}},
		{DemoEvent{EventID: "odd", Classes: []DemoClass{{"c", true, 37}}}, Layout{
			Sections: []SectionLayout{{ID: "A", Class: "c", Rows: 2, SeatsPerRow: 20}}, // 37 is prime: rounded up to 40
		}},
	}
	for _, tt := range tests {
		t.Run(tt.event.EventID, func(t *testing.T) {
			got := DemoLayout(tt.event)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DemoLayout(%s) = %+v, want %+v", tt.event.EventID, got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("DemoLayout(%s) is invalid: %v", tt.event.EventID, err)
			}
		})
	}
}

func TestSeedDemo(t *testing.T) {
	testkit.ForEachDB(t, "inventory", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		s := newStore(t, db, newClock())
		n, err := s.SeedDemo(ctx, demoEvents)
		if err != nil || n != len(demoEvents) {
			t.Fatalf("SeedDemo = %d, %v, want %d", n, err, len(demoEvents))
		}
		if n, err := s.SeedDemo(ctx, demoEvents); err != nil || n != 0 {
			t.Errorf("SeedDemo again = %d, %v, want 0: the maps exist", n, err)
		}
		m, err := s.SeatMap(ctx, "evt-flash")
		if err != nil || !m.FlashSale || m.Counts.Total != 300 {
			t.Errorf("evt-flash = flash %v, %d seats, %v; want a 300-seat flash sale", m.FlashSale, m.Counts.Total, err)
		}
	})
}
