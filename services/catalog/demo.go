package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"time"
	_ "time/tzdata" // venue time zones, even on a machine without a zoneinfo database

	"boxoffice.dev/platform/money"
)

// DemoFlashSaleID is the demo's one flash-sale event: a few hundred seats that the
// flash-sale scenario sends thousands of fans after.
const DemoFlashSaleID = "evt-flash"

// Demo is the demo catalog: venues first, then the events held at them.
type Demo struct {
	Venues []Venue
	Events []Event
}

// demoVenue is a venue and the zone its events' local times are in.
type demoVenue struct {
	Venue
	zone string
}

var demoVenues = []demoVenue{
	{Venue{ID: "ven-sp-01", Name: "Arena Paulistana", City: "São Paulo", Country: "BR", Address: "Rua Turiassu, 1840 – Perdizes",
		Capacity: 2400, Sections: []Section{{"Pista", 1600, false}, {"Cadeira Superior", 800, true}}}, "America/Sao_Paulo"},
	{Venue{ID: "ven-sp-02", Name: "Teatro da Consolação", City: "São Paulo", Country: "BR", Address: "Rua da Consolação, 2094",
		Capacity: 600, Sections: []Section{{"Plateia", 400, true}, {"Balcão", 200, true}}}, "America/Sao_Paulo"},
	{Venue{ID: "ven-lis-01", Name: "Coliseu do Intendente", City: "Lisboa", Country: "PT", Address: "Largo do Intendente Pina Manique, 12",
		Capacity: 900, Sections: []Section{{"Plateia", 500, true}, {"Geral", 400, false}}}, "Europe/Lisbon"},
	{Venue{ID: "ven-lis-02", Name: "Casa do Fado de Alfama", City: "Lisboa", Country: "PT", Address: "Rua de São Miguel, 27",
		Capacity: 220, Sections: []Section{{"Sala", 220, true}}}, "Europe/Lisbon"},
	{Venue{ID: "ven-ber-01", Name: "Spreewerk Halle", City: "Berlin", Country: "DE", Address: "Köpenicker Straße 70",
		Capacity: 1500, Sections: []Section{{"Innenraum", 1200, false}, {"Empore", 300, true}}}, "Europe/Berlin"},
	{Venue{ID: "ven-ber-02", Name: "Kammersaal Görlitzer Ufer", City: "Berlin", Country: "DE", Address: "Görlitzer Ufer 4",
		Capacity: 350, Sections: []Section{{"Parkett", 250, true}, {"Rang", 100, true}}}, "Europe/Berlin"},
}

// demoAct is a show the demo puts on twice.
type demoAct struct {
	title      string
	performers []string
	tags       []string
	venue      string
	hour       int   // local start time
	price      int64 // the cheapest class, minor units
}

var demoActs = []demoAct{
	{"Céu de Agosto – Turnê Maré Alta", []string{"Céu de Agosto"}, []string{"pop", "mpb"}, "ven-sp-01", 21, 18000},
	{"Noite de Bossa Nova com Lúcia Araújo", []string{"Lúcia Araújo"}, []string{"bossa nova", "jazz"}, "ven-sp-02", 20, 12000},
	{"Orquestra Sinfônica do Ipiranga: Villa-Lobos", []string{"Orquestra Sinfônica do Ipiranga"}, []string{"classical"}, "ven-sp-02", 19, 9000},
	{"Maracatu Atômico ao Vivo", []string{"Maracatu Atômico"}, []string{"rock", "brazilian"}, "ven-sp-01", 22, 15000},
	{"Samba de Raiz: Grupo Pé na Areia", []string{"Grupo Pé na Areia"}, []string{"samba"}, "ven-sp-01", 20, 8000},
	{"Stand-up: João Pé-de-Feijão", []string{"João Pé-de-Feijão"}, []string{"comedy"}, "ven-sp-02", 21, 6000},
	{"Forró do Sertão: São João Fora de Época", []string{"Trio Asa Branca Nova", "Zé do Fole"}, []string{"forró", "brazilian"}, "ven-sp-01", 20, 25000},
	{"Fado ao Vivo: Mariana Conceição", []string{"Mariana Conceição"}, []string{"fado"}, "ven-lis-02", 21, 3500},
	{"Noites de Alfama", []string{"Rui Magalhães", "Inês Brandão"}, []string{"fado", "acoustic"}, "ven-lis-02", 22, 2500},
	{"Tejo Jazz Quartet", []string{"Tejo Jazz Quartet"}, []string{"jazz"}, "ven-lis-01", 21, 3000},
	{"Festival Eléctrico: Noite de Abertura", []string{"DJ Sebastião", "Luz Néon"}, []string{"electronic"}, "ven-lis-01", 23, 4500},
	{"Teatro: A Gaivota", []string{"Companhia do Chiado"}, []string{"theatre"}, "ven-lis-01", 20, 2000},
	{"Guitarra Portuguesa em Concerto", []string{"António Sá Viana"}, []string{"classical", "fado"}, "ven-lis-02", 19, 2800},
	{"Techno Nacht im Spreewerk", []string{"Kollektiv Süd", "Anja Weiß"}, []string{"electronic", "techno"}, "ven-ber-01", 23, 3200},
	{"Bach & Söhne: Kammermusik", []string{"Berliner Kammerensemble"}, []string{"classical"}, "ven-ber-02", 19, 4000},
	{"Jazz an der Spree", []string{"Jürgen Größ Trio"}, []string{"jazz"}, "ven-ber-02", 20, 2900},
	{"Indie-Abend: Müller & die Söhne", []string{"Müller & die Söhne"}, []string{"rock", "indie"}, "ven-ber-01", 20, 3800},
	{"Oper konzertant: Die Zauberflöte", []string{"Ensemble Görlitzer Ufer"}, []string{"classical", "opera"}, "ven-ber-02", 19, 5500},
	{"Kinderkonzert: Der kleine Bär", []string{"Die Bärenbande"}, []string{"family"}, "ven-ber-01", 15, 1500},
	{"Comedy Club Kreuzberg", []string{"Özlem Şahin", "Max Krüger"}, []string{"comedy"}, "ven-ber-02", 21, 2200},
}

// DemoCatalog returns the demo catalog for events starting the day after today: six venues
// in São Paulo, Lisbon and Berlin, forty events "evt-001"…"evt-040" (twenty acts, two nights
// each, spread over eight weeks at local evening times) and the flash sale DemoFlashSaleID.
// The same today gives the same catalog, ids included, so other services' demo data can
// refer to it.
func DemoCatalog(today time.Time) Demo {
	today = today.UTC() // the day as UTC sees it: east of UTC, a local date would put sales in the future
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	onSale := day.AddDate(0, 0, -7) // already on sale: the demo is for buying
	var d Demo
	zones := map[string]*time.Location{}
	for _, v := range demoVenues {
		d.Venues = append(d.Venues, v.Venue)
		zones[v.ID] = location(v.zone)
	}
	for i := range 2 * len(demoActs) {
		act := demoActs[i%len(demoActs)]
		v := venueByID(act.venue)
		offset := 1 + i*7/5 // a show every day or two, over eight weeks
		date := day.AddDate(0, 0, offset)
		e := Event{
			ID:          fmt.Sprintf("evt-%03d", i+1),
			Title:       act.title,
			Description: fmt.Sprintf("%s at %s, %s.", act.title, v.Name, v.City),
			Performers:  act.performers,
			VenueID:     v.ID,
			StartsAt:    time.Date(date.Year(), date.Month(), date.Day(), act.hour, 0, 0, 0, zones[v.ID]),
			OnSaleAt:    onSale,
			ImageURL:    fmt.Sprintf("https://images.boxoffice.test/events/evt-%03d.jpg", i+1),
			City:        v.City,
			Country:     v.Country,
			Tags:        act.tags,
		}
		e.TicketClasses = demoClasses(v, act.price)
		d.Events = append(d.Events, e)
	}
	sp := venueByID("ven-sp-02")
	flashDay := day.AddDate(0, 0, 14)
	d.Events = append(d.Events, Event{
		ID:          DemoFlashSaleID,
		Title:       "Flash Sale: Aurora Boreal – Único Show no Brasil",
		Description: "One night only, three hundred seats. Join the waiting room: admissions are dosed and every account may try five holds a minute.",
		Performers:  []string{"Aurora Boreal"},
		VenueID:     sp.ID,
		StartsAt:    time.Date(flashDay.Year(), flashDay.Month(), flashDay.Day(), 21, 0, 0, 0, zones[sp.ID]),
		OnSaleAt:    day,
		FlashSale:   true,
		ImageURL:    "https://images.boxoffice.test/events/evt-flash.jpg",
		City:        sp.City,
		Country:     sp.Country,
		Tags:        []string{"pop", "flash sale"},
		TicketClasses: []TicketClass{
			{ID: "plateia", Name: "Plateia", Price: money.Money{Currency: "BRL", Minor: 45000}, Seated: true, Capacity: 200},
			{ID: "balcao", Name: "Balcão", Price: money.Money{Currency: "BRL", Minor: 30000}, Seated: true, Capacity: 100},
		},
	})
	return d
}

// demoClasses prices a venue's sections: the cheapest at price, each next one dearer.
func demoClasses(v Venue, price int64) []TicketClass {
	currency := map[string]string{"BR": "BRL", "PT": "EUR", "DE": "EUR"}[v.Country]
	classes := make([]TicketClass, len(v.Sections))
	for i, s := range v.Sections {
		classes[i] = TicketClass{
			ID:       fmt.Sprintf("class-%d", i+1),
			Name:     s.Name,
			Price:    money.Money{Currency: currency, Minor: price * int64(2+i) / 2},
			Seated:   s.Seated,
			Capacity: s.Capacity,
		}
	}
	return classes
}

func venueByID(id string) Venue {
	for _, v := range demoVenues {
		if v.ID == id {
			return v.Venue
		}
	}
	return Venue{}
}

func location(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil { // not with time/tzdata linked in; UTC keeps the demo usable regardless
		return time.UTC
	}
	return loc
}

// Seed stores the demo catalog for the store's today when the catalog is empty, in one
// transaction, each row with its event; it reports whether it did. Instances starting
// together seed once: the first venue insert of the second finds the id taken and backs off.
func (s *Store) Seed(ctx context.Context) (bool, error) {
	empty, err := s.Empty(ctx)
	if err != nil || !empty {
		return false, err
	}
	demo := DemoCatalog(s.Clock.Now())
	seeded := false
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		for i, v := range demo.Venues {
			ok, err := s.insertVenue(ctx, tx, v)
			switch {
			case err != nil:
				return err
			case !ok && i == 0:
				return nil // another instance seeded first
			case !ok:
				return fmt.Errorf("venue %s exists beside a missing %s", v.ID, demo.Venues[0].ID)
			}
			if err := s.emitVenue(ctx, tx, v, s.Clock.Now()); err != nil {
				return err
			}
		}
		for _, e := range demo.Events {
			e.Version, e.UpdatedAt = 1, s.Clock.Now()
			if err := e.Validate(); err != nil {
				return fmt.Errorf("demo event %s: %w", e.ID, err)
			}
			ok, err := s.insertEvent(ctx, tx, e)
			switch {
			case err != nil:
				return fmt.Errorf("demo event %s: %w", e.ID, err)
			case !ok:
				return fmt.Errorf("demo event %s exists in a catalog without venues", e.ID)
			}
			if err := s.emitEvent(ctx, tx, eventCreated, e); err != nil {
				return err
			}
		}
		seeded = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("seed demo catalog: %w", err)
	}
	return seeded, nil
}
