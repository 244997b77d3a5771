package catalog

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"time"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb/keyset"
)

// eventList is a page of events as GET /v1/events answers it.
type eventList struct {
	Events     []Event `json:"events"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// handleListEvents answers GET /v1/events?city=&from=&to=&q=&performer=&tag=&max_price=&limit=&cursor=
// with a page of events, soonest first. from and to are RFC 3339 times; max_price is in
// minor units of the event's currency.
func handleListEvents(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f, limit, err := listParams(q)
		var page eventList
		if err == nil {
			page.Events, page.NextCursor, err = store.ListEvents(r.Context(), f, limit, q.Get("cursor"))
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		page.Events = orEmpty(page.Events)
		httpapi.WriteJSON(w, http.StatusOK, page)
	})
}

func listParams(q url.Values) (f Filter, limit int, err error) {
	f = Filter{City: q.Get("city"), Query: q.Get("q"), Performer: q.Get("performer"), Tag: q.Get("tag")}
	if f.From, err = timeParam(q.Get("from"), "from"); err != nil {
		return f, 0, err
	}
	if f.To, err = timeParam(q.Get("to"), "to"); err != nil {
		return f, 0, err
	}
	if f.MaxPrice, err = intParam(q.Get("max_price"), "max_price"); err != nil {
		return f, 0, err
	}
	limit, err = httpapi.Limit(q, keyset.DefaultPageSize, keyset.MaxPageSize)
	return f, limit, err
}

// handleGetEvent answers GET /v1/events/{id}.
func handleGetEvent(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := store.Event(r.Context(), r.PathValue("id"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, e)
	})
}

// handleGetVenue answers GET /v1/venues/{id}.
func handleGetVenue(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := store.Venue(r.Context(), r.PathValue("id"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, v)
	})
}

// handleCreateVenue answers POST /v1/admin/venues with 201 and the stored venue.
func handleCreateVenue(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v Venue
		err := httpapi.DecodeJSON(r, &v)
		if err == nil {
			v, err = store.CreateVenue(r.Context(), v)
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		w.Header().Set("Location", "/v1/venues/"+v.ID)
		httpapi.WriteJSON(w, http.StatusCreated, v)
	})
}

// handleCreateEvent answers POST /v1/admin/events with 201 and the stored event.
func handleCreateEvent(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b eventBody
		err := httpapi.DecodeJSON(r, &b)
		var e Event
		if err == nil {
			e, err = Event{ID: deref(b.ID)}.Apply(b.patch())
		}
		if err == nil {
			e, err = store.CreateEvent(r.Context(), e)
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		w.Header().Set("Location", "/v1/events/"+e.ID)
		httpapi.WriteJSON(w, http.StatusCreated, e)
	})
}

// handleUpdateEvent answers PATCH /v1/admin/events/{id}: the fields present in the body
// replace the event's, the others stay.
func handleUpdateEvent(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var b eventBody
		err := httpapi.DecodeJSON(r, &b)
		if err == nil && b.ID != nil && *b.ID != id {
			err = problem.InvalidField("id", "cannot change; it is %q", id)
		}
		var e Event
		if err == nil {
			e, err = store.UpdateEvent(r.Context(), id, b.patch())
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, e)
	})
}

// eventBody is the JSON an admin writes for an event: its writable fields, each optional so
// that one type serves both create and patch. City, country and version are the catalog's
// own and rejected as unknown fields.
type eventBody struct {
	ID            *string        `json:"id"`
	Title         *string        `json:"title"`
	Description   *string        `json:"description"`
	Performers    *[]string      `json:"performers"`
	VenueID       *string        `json:"venue_id"`
	StartsAt      *rfc3339       `json:"starts_at"`
	OnSaleAt      *rfc3339       `json:"on_sale_at"`
	FlashSale     *bool          `json:"flash_sale"`
	ImageURL      *string        `json:"image_url"`
	TicketClasses *[]TicketClass `json:"ticket_classes"`
	Tags          *[]string      `json:"tags"`
}

func (b eventBody) patch() EventPatch {
	return EventPatch{
		Title: b.Title, Description: b.Description, Performers: b.Performers, VenueID: b.VenueID,
		StartsAt: b.StartsAt.time(), OnSaleAt: b.OnSaleAt.time(), FlashSale: b.FlashSale,
		ImageURL: b.ImageURL, TicketClasses: b.TicketClasses, Tags: b.Tags,
	}
}

// rfc3339 is a time.Time whose malformed value fails as a type error, which the JSON
// decoder tags with the field's name; time.Time's own parse error does not say which field.
type rfc3339 struct{ time.Time }

func (t *rfc3339) UnmarshalJSON(b []byte) error {
	if err := t.Time.UnmarshalJSON(b); err != nil {
		return &json.UnmarshalTypeError{Value: "string", Type: reflect.TypeFor[time.Time]()}
	}
	return nil
}

func (t *rfc3339) time() *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func timeParam(v, name string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, problem.InvalidField(name, "want an RFC 3339 time such as 2026-12-01T20:00:00Z")
	}
	return t, nil
}

func intParam(v, name string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, problem.InvalidField(name, "want a non-negative integer")
	}
	return n, nil
}
