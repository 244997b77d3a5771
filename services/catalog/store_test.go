package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"boxoffice.dev/platform/clock"
	"boxoffice.dev/platform/outbox"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/testkit"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
)

// newStore migrates db and returns a Store on it with events on and a fixed clock.
func newStore(t *testing.T, db *sqldb.DB) *Store {
	t.Helper()
	if err := db.Migrate(t.Context(), Migrations()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := outbox.EnsureTable(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	return &Store{DB: db, Emit: true, Clock: clock.Func(func() time.Time { return t0 })}
}

func mustVenue(t *testing.T, s *Store, v Venue) Venue {
	t.Helper()
	v, err := s.CreateVenue(t.Context(), v)
	if err != nil {
		t.Fatalf("CreateVenue(%s): %v", v.ID, err)
	}
	return v
}

func mustEvent(t *testing.T, s *Store, e Event) Event {
	t.Helper()
	e, err := s.CreateEvent(t.Context(), e)
	if err != nil {
		t.Fatalf("CreateEvent(%s): %v", e.ID, err)
	}
	return e
}

// outboxRows returns the subjects and decoded payloads of the outbox, oldest first.
func outboxRows(t *testing.T, db *sqldb.DB) (subjects []string, changes []*catalogv1.EventChange) {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT subject, payload FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var subject string
		var payload []byte
		if err := rows.Scan(&subject, &payload); err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, subject)
		if subject == "boxoffice.catalog.venue.created" {
			continue
		}
		var c catalogv1.EventChange
		if err := protojson.Unmarshal(payload, &c); err != nil {
			t.Fatalf("decode %s payload %s: %v", subject, payload, err)
		}
		changes = append(changes, &c)
	}
	return subjects, changes
}

var sp = Venue{ID: "ven-sp", Name: "Teatro", City: "São Paulo", Country: "BR", Capacity: 500}

func TestStoreCreateAndRead(t *testing.T) {
	testkit.ForEachDB(t, "catalog", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		mustVenue(t, s, sp)
		in := validEvent()
		in.VenueID = sp.ID
		in.StartsAt = time.Date(2030, 6, 1, 21, 0, 0, 123456789, time.FixedZone("BRT", -3*3600))
		created := mustEvent(t, s, in)

		got, err := s.Event(t.Context(), in.ID)
		if err != nil {
			t.Fatalf("Event(%s): %v", in.ID, err)
		}
		wantStart := time.Date(2030, 6, 2, 0, 0, 0, 123000000, time.UTC)
		if !got.StartsAt.Equal(wantStart) || got.StartsAt.Location() != time.UTC {
			t.Errorf("StartsAt = %v, want %v in UTC", got.StartsAt, wantStart)
		}
		if got.City != "São Paulo" || got.Country != "BR" || got.Version != 1 || !got.UpdatedAt.Equal(t0) {
			t.Errorf("Event() = city %q country %q version %d updated %v, want the venue's place, 1, %v", got.City, got.Country, got.Version, got.UpdatedAt, t0)
		}
		if fmt.Sprint(got) != fmt.Sprint(created) {
			t.Errorf("Event() = %+v,\nwant what CreateEvent returned %+v", got, created)
		}
		v, err := s.Venue(t.Context(), sp.ID)
		if err != nil || v.Name != sp.Name || len(v.Sections) != 0 {
			t.Errorf("Venue(%s) = %+v, %v; want %+v", sp.ID, v, err, sp)
		}
		subjects, changes := outboxRows(t, db)
		if !slices.Equal(subjects, []string{"boxoffice.catalog.venue.created", "boxoffice.catalog.event.created"}) {
			t.Errorf("outbox subjects = %v", subjects)
		}
		if len(changes) != 1 || changes[0].GetId() != "evt-x@v1" || changes[0].GetEvent().GetCity() != "São Paulo" {
			t.Errorf("event change = %v, want evt-x@v1 in São Paulo", changes)
		}
	})
}

func TestStoreRejectsWithoutWriting(t *testing.T) {
	testkit.ForEachDB(t, "catalog", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		mustVenue(t, s, sp)
		e := validEvent()
		e.VenueID = sp.ID
		mustEvent(t, s, e)
		title := "Renamed"
		tests := []struct {
			name  string
			write func() error
			code  problem.Code
			field string
		}{
			{"unknown venue", func() error {
				x := validEvent()
				x.ID = "evt-y"
				x.VenueID = "nope"
				_, err := s.CreateEvent(t.Context(), x)
				return err
			}, problem.Invalid, "venue_id"},
			{"event id taken", func() error { _, err := s.CreateEvent(t.Context(), e); return err }, problem.Conflict, ""},
			{"venue id taken", func() error { _, err := s.CreateVenue(t.Context(), sp); return err }, problem.Conflict, ""},
			{"patch to unknown venue", func() error {
				v := "nope"
				_, err := s.UpdateEvent(t.Context(), e.ID, EventPatch{VenueID: &v})
				return err
			}, problem.Invalid, "venue_id"},
			{"patch unknown event", func() error { _, err := s.UpdateEvent(t.Context(), "evt-none", EventPatch{Title: &title}); return err }, problem.NotFound, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.write()
				var p *problem.Error
				if !errors.As(err, &p) || p.Code != tt.code || p.Field != tt.field {
					t.Errorf("write = %v, want %s %q", err, tt.code, tt.field)
				}
			})
		}
		if subjects, _ := outboxRows(t, db); len(subjects) != 2 {
			t.Errorf("outbox holds %d rows after refused writes, want the 2 of the accepted ones", len(subjects))
		}
		if got, _ := s.Event(t.Context(), e.ID); got.Version != 1 || got.Title != e.Title {
			t.Errorf("event after refused patch = version %d %q, want version 1 %q", got.Version, got.Title, e.Title)
		}
	})
}

func TestStoreUpdateEvent(t *testing.T) {
	testkit.ForEachDB(t, "catalog", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		mustVenue(t, s, sp)
		lis := mustVenue(t, s, Venue{ID: "ven-lis", Name: "Sala", City: "Lisboa", Country: "PT", Capacity: 100})
		e := validEvent()
		e.VenueID = sp.ID
		mustEvent(t, s, e)

		title := "Fado no Tejo"
		got, err := s.UpdateEvent(t.Context(), e.ID, EventPatch{Title: &title, VenueID: &lis.ID})
		if err != nil {
			t.Fatalf("UpdateEvent: %v", err)
		}
		if got.Title != title || got.City != "Lisboa" || got.Country != "PT" || got.Version != 2 {
			t.Errorf("UpdateEvent() = %q in %q/%q version %d, want %q in Lisboa/PT version 2", got.Title, got.City, got.Country, got.Version, title)
		}
		_, changes := outboxRows(t, db)
		if len(changes) != 2 || changes[1].GetType() != "catalog.event.updated" || changes[1].GetEvent().GetVersion() != 2 || changes[1].GetEvent().GetTitle() != title {
			t.Errorf("changes = %v, want created then updated v2 %q", changes, title)
		}
	})
}

// Concurrent patches of one event each land once, in turn: versions are consecutive and
// each has exactly one event in the outbox.
func TestStoreConcurrentUpdates(t *testing.T) {
	testkit.ForEachDB(t, "catalog", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		mustVenue(t, s, sp)
		e := validEvent()
		e.VenueID = sp.ID
		mustEvent(t, s, e)

		const writers = 6
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for i := range writers {
			wg.Go(func() {
				title := fmt.Sprintf("Title %d", i)
				_, err := s.UpdateEvent(context.Background(), e.ID, EventPatch{Title: &title})
				if err != nil && problem.CodeOf(err) != problem.Conflict {
					t.Errorf("UpdateEvent: %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					ok++
				}
			})
		}
		wg.Wait()
		got, err := s.Event(t.Context(), e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ok == 0 || got.Version != int64(1+ok) {
			t.Errorf("after %d successful updates version = %d, want %d", ok, got.Version, 1+ok)
		}
		_, changes := outboxRows(t, db)
		for i, c := range changes {
			if c.GetEvent().GetVersion() != int64(i+1) {
				t.Errorf("change %d has version %d, want %d", i, c.GetEvent().GetVersion(), i+1)
			}
		}
		if len(changes) != 1+ok {
			t.Errorf("outbox holds %d event changes, want %d", len(changes), 1+ok)
		}
	})
}

func TestStoreListEvents(t *testing.T) {
	testkit.ForEachDB(t, "catalog", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		if seeded, err := s.Seed(t.Context()); err != nil || !seeded {
			t.Fatalf("Seed() = %v, %v; want true", seeded, err)
		}
		demo := DemoCatalog(t0)
		ctx := t.Context()
		all := func(f Filter) []Event {
			var out []Event
			for _, e := range demo.Events {
				if f.City != "" && Fold(e.City) != Fold(f.City) || f.MaxPrice > 0 && e.MinPrice().Minor > f.MaxPrice ||
					!f.From.IsZero() && e.StartsAt.Before(f.From) || !f.To.IsZero() && !e.StartsAt.Before(f.To) {
					continue
				}
				out = append(out, e)
			}
			return out
		}
		week := t0.AddDate(0, 0, 7)
		tests := []struct {
			name string
			f    Filter
			want []string // ids in order; nil = computed by all(f)
		}{
			{"everything", Filter{}, nil},
			{"city without accents", Filter{City: "sao paulo"}, nil},
			{"city upper case", Filter{City: "LISBOA"}, nil},
			{"first week", Filter{From: t0, To: week}, nil},
			{"under 30 euros or 30 reais", Filter{MaxPrice: 3000}, nil},
			{"title substring, accents ignored", Filter{Query: "forro do SERTAO"}, []string{"evt-007", "evt-027"}},
			{"performer, accents ignored", Filter{Performer: "größ"}, []string{"evt-016", "evt-036"}},
			{"tag", Filter{Tag: "Fado"}, []string{"evt-008", "evt-009", "evt-013", "evt-028", "evt-029", "evt-033"}},
			{"a tag is whole", Filter{Tag: "fad"}, []string{}},
			{"like wildcards are literal", Filter{Query: "%"}, []string{}},
			{"combined", Filter{City: "Berlin", Tag: "classical", MaxPrice: 4500}, []string{"evt-015", "evt-035"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				want := tt.want
				if want == nil {
					for _, e := range all(tt.f) {
						want = append(want, e.ID)
					}
				}
				got := listAll(t, s, tt.f, 7)
				slices.Sort(want)
				sorted := slices.Clone(got)
				slices.Sort(sorted)
				if !slices.Equal(sorted, want) {
					t.Errorf("ListEvents(%+v) = %v, want %v", tt.f, got, want)
				}
			})
		}
		_, _, err := s.ListEvents(ctx, Filter{}, 5, "bm9wZQ")
		if problem.CodeOf(err) != problem.Invalid {
			t.Errorf("ListEvents(bad cursor) = %v, want invalid cursor", err)
		}
	})
}

// listAll pages through ListEvents, checking pages are ordered by start and never repeat.
func listAll(t *testing.T, s *Store, f Filter, limit int) []string {
	t.Helper()
	var ids []string
	var last time.Time
	cursor := ""
	for range 100 {
		page, next, err := s.ListEvents(t.Context(), f, limit, cursor)
		if err != nil {
			t.Fatalf("ListEvents(%+v, %q): %v", f, cursor, err)
		}
		if len(page) > limit {
			t.Fatalf("page of %d, limit %d", len(page), limit)
		}
		for _, e := range page {
			if e.StartsAt.Before(last) || slices.Contains(ids, e.ID) {
				t.Fatalf("ListEvents returned %s (starts %v) out of order or twice", e.ID, e.StartsAt)
			}
			last = e.StartsAt
			ids = append(ids, e.ID)
		}
		if next == "" {
			return ids
		}
		cursor = next
	}
	t.Fatal("ListEvents never ended")
	return nil
}

func TestStoreBatchGet(t *testing.T) {
	testkit.ForEachDB(t, "catalog", func(t *testing.T, db *sqldb.DB) {
		s := newStore(t, db)
		if _, err := s.Seed(t.Context()); err != nil {
			t.Fatal(err)
		}
		found, missing, err := s.Events(t.Context(), []string{"evt-010", "nope", "evt-002", "evt-010"})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range found {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, []string{"evt-010", "evt-002"}) || !slices.Equal(missing, []string{"nope"}) {
			t.Errorf("Events() = %v missing %v, want [evt-010 evt-002] missing [nope]", ids, missing)
		}
		venues, missing, err := s.Venues(t.Context(), []string{"ven-ber-01", "ven-xx"})
		if err != nil || len(venues) != 1 || venues[0].City != "Berlin" || !slices.Equal(missing, []string{"ven-xx"}) {
			t.Errorf("Venues() = %v missing %v, %v", venues, missing, err)
		}
		if _, _, err := s.Events(t.Context(), make([]string, maxBatch+1)); problem.CodeOf(err) != problem.Invalid {
			t.Errorf("Events(%d ids) = %v, want invalid", maxBatch+1, err)
		}
	})
}

// Two instances starting together seed the demo once.
func TestSeedOnce(t *testing.T) {
	testkit.ForEachDB(t, "catalog", func(t *testing.T, db *sqldb.DB) {
		a, b := newStore(t, db), newStore(t, db)
		var wg sync.WaitGroup
		results := make([]bool, 2)
		for i, s := range []*Store{a, b} {
			wg.Go(func() {
				seeded, err := s.Seed(context.Background())
				if err != nil {
					t.Errorf("Seed: %v", err)
				}
				results[i] = seeded
			})
		}
		wg.Wait()
		if results[0] == results[1] {
			t.Errorf("Seed results = %v, want exactly one true", results)
		}
		if again, err := a.Seed(t.Context()); again || err != nil {
			t.Errorf("Seed() on a seeded catalog = %v, %v; want false, nil", again, err)
		}
		_, changes := outboxRows(t, db)
		if len(changes) != len(DemoCatalog(t0).Events) {
			t.Errorf("outbox holds %d event changes, want one per demo event", len(changes))
		}
	})
}
