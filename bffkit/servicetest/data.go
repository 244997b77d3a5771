package servicetest

import (
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
)

// Data is what the fakes serve, shared by all of them so that an order sees the hold
// inventory placed. Tests may read and change it under Mu.
type Data struct {
	Mu sync.Mutex

	Events    []*catalogv1.Event // in start order
	Venues    map[string]*catalogv1.Venue
	SeatMaps  map[string]*inventoryv1.SeatMap // by event id
	Holds     []*inventoryv1.Hold             // in placing order
	Orders    []*orderv1.OrderInfo            // in creating order
	Positions map[string]int64                // waitroom places by "user/event"; 0 = admitted
	Now       time.Time                       // the fakes' clock: a week before Epoch unless a test moves it

	nextID    int
	orderKeys map[string]string // order ids by "user/idempotency key"
	holdKeys  map[string]string // hold ids by "user/idempotency key"
}

// holdFor is how long a fake hold lasts (it never expires; the time is only shown).
const holdFor = 10 * time.Minute

// Every fake event has a general-admission class and a seated one with this seat map: two
// sections of four rows of twelve seats.
const (
	sections    = 2
	rows        = 4
	seatsPerRow = 12
)

// NewData builds n events at three venues, each with its seat map. Event i (from 1) starts i-1
// days after Epoch; every third is in Lisboa, the others in São Paulo; "evt-002" is a flash
// sale; seats A-1-1 and A-1-2 of every event are sold and A-1-3 held.
func NewData(n int) *Data {
	d := &Data{Venues: map[string]*catalogv1.Venue{}, SeatMaps: map[string]*inventoryv1.SeatMap{}, Positions: map[string]int64{},
		orderKeys: map[string]string{}, holdKeys: map[string]string{}, Now: Epoch.Add(-7 * 24 * time.Hour)}
	for i, city := range []string{"São Paulo", "São Paulo", "Lisboa"} {
		id := fmt.Sprintf("ven-%d", i+1)
		d.Venues[id] = &catalogv1.Venue{
			Id: id, Name: fmt.Sprintf("Venue %d of %s", i+1, city), City: city, Country: map[bool]string{true: "PT", false: "BR"}[city == "Lisboa"],
			Address: fmt.Sprintf("Rua Fictícia, %d", 100+i), Capacity: 1000 + sections*rows*seatsPerRow,
			Sections: []*catalogv1.Section{{Name: "Pista", Capacity: 1000}, {Name: "A", Capacity: rows * seatsPerRow, Seated: true}, {Name: "B", Capacity: rows * seatsPerRow, Seated: true}},
		}
	}
	for i := range n {
		id := fmt.Sprintf("evt-%03d", i+1)
		venue := d.Venues[fmt.Sprintf("ven-%d", i%3+1)]
		starts := Epoch.Add(time.Duration(i) * 24 * time.Hour)
		d.Events = append(d.Events, &catalogv1.Event{
			Id: id, Title: fmt.Sprintf("Show number %d", i+1),
			Description: fmt.Sprintf("The %dth show of the season, with a long description that a phone does not show in full but a web page does: doors open an hour before, no re-entry.", i+1),
			Performers:  []string{fmt.Sprintf("Band %d", i+1), "The Openers"}, VenueId: venue.Id,
			StartsAt: timestamppb.New(starts), OnSaleAt: timestamppb.New(starts.Add(-30 * 24 * time.Hour)),
			FlashSale: id == "evt-002", ImageUrl: "https://images.boxoffice.test/events/" + id + ".jpg",
			City: venue.City, Country: venue.Country, Tags: []string{"music"}, Version: 1,
			TicketClasses: []*catalogv1.TicketClass{
				{Id: "cadeira", Name: "Cadeira", Price: &commonv1.Money{Currency: "BRL", Minor: 15000}, Seated: true, Capacity: sections * rows * seatsPerRow},
				{Id: "pista", Name: "Pista", Price: &commonv1.Money{Currency: "BRL", Minor: int64(8000 + 100*i)}, Capacity: 1000},
			},
		})
		d.SeatMaps[id] = seatMap(id, id == "evt-002")
	}
	return d
}

func seatMap(event string, flash bool) *inventoryv1.SeatMap {
	m := &inventoryv1.SeatMap{EventId: event, FlashSale: flash, Counts: &inventoryv1.Counts{}}
	for s := range sections {
		sec := &inventoryv1.Section{Id: string(rune('A' + s)), Class: "cadeira"}
		for r := range rows {
			row := &inventoryv1.Row{Label: fmt.Sprint(r + 1)}
			for n := range seatsPerRow {
				id := fmt.Sprintf("%s-%d-%d", sec.Id, r+1, n+1)
				st := inventoryv1.SeatStatus_SEAT_STATUS_AVAILABLE
				switch id {
				case "A-1-1", "A-1-2":
					st = inventoryv1.SeatStatus_SEAT_STATUS_SOLD
				case "A-1-3":
					st = inventoryv1.SeatStatus_SEAT_STATUS_HELD
				}
				row.Seats = append(row.Seats, &inventoryv1.Seat{Id: id, Number: int32(n + 1), Status: st})
			}
			sec.Rows = append(sec.Rows, row)
		}
		m.Sections = append(m.Sections, sec)
	}
	m.Ga = []*inventoryv1.GAClass{{Class: "pista", Counts: &inventoryv1.Counts{Total: 1000, Available: 1000}}}
	recount(m)
	return m
}

// recount sums m's seats and GA classes into m.Counts.
func recount(m *inventoryv1.SeatMap) {
	c := &inventoryv1.Counts{}
	for _, sec := range m.Sections {
		for _, row := range sec.Rows {
			for _, st := range row.Seats {
				c.Total++
				switch st.Status {
				case inventoryv1.SeatStatus_SEAT_STATUS_AVAILABLE:
					c.Available++
				case inventoryv1.SeatStatus_SEAT_STATUS_HELD:
					c.Held++
				case inventoryv1.SeatStatus_SEAT_STATUS_SOLD:
					c.Sold++
				}
			}
		}
	}
	for _, ga := range m.Ga {
		c.Total += ga.Counts.Total
		c.Available += ga.Counts.Available
		c.Held += ga.Counts.Held
		c.Sold += ga.Counts.Sold
	}
	m.Counts = c
}

// Event returns the event with id, or nil. Call with Mu held.
func (d *Data) Event(id string) *catalogv1.Event {
	for _, e := range d.Events {
		if e.Id == id {
			return e
		}
	}
	return nil
}

// newID returns prefix-1, prefix-2, … Call with Mu held.
func (d *Data) newID(prefix string) string {
	d.nextID++
	return fmt.Sprintf("%s-%d", prefix, d.nextID)
}
