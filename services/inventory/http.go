package inventory

import (
	"log/slog"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb/keyset"
)

// HeaderAdmissionPass carries the waitroom's pass on a flash-sale hold request.
const HeaderAdmissionPass = "X-Admission-Pass"

// handleGetSeats answers GET /v1/events/{id}/seats with the seat map and every seat's
// status. Public: no account needed to look.
func handleGetSeats(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, err := store.SeatMap(r.Context(), r.PathValue("id"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, m)
	})
}

// holdBody is POST /v1/events/{id}/holds: seats, or a GA class and quantity.
type holdBody struct {
	Seats    []string `json:"seats"`
	Class    string   `json:"class"`
	Quantity int      `json:"quantity"`
}

// handlePlaceHold answers POST /v1/events/{id}/holds with 201 and the hold. With an
// Idempotency-Key it answers a repeat of the key with 200 and the hold the first request
// placed, as it is now (marked Idempotent-Replayed: true), as order's POST /v1/orders does.
func handlePlaceHold(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := requireUser(w, r, log)
		if !ok {
			return
		}
		var body holdBody
		if err := httpapi.DecodeJSON(r, &body); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		h, created, err := store.PlaceHoldOnce(r.Context(), HoldRequest{
			EventID: r.PathValue("id"), Account: user,
			Seats: body.Seats, Class: body.Class, Quantity: body.Quantity,
			Pass: r.Header.Get(HeaderAdmissionPass), IdempotencyKey: r.Header.Get(IdempotencyKeyHeader),
		})
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteCreated(w, "/v1/holds/"+h.ID, created, h)
	})
}

// handleListHolds answers GET /v1/holds?limit=&cursor= with the caller's holds, newest first.
func handleListHolds(log *slog.Logger, store *Store) http.Handler {
	type page struct {
		Holds      []Hold `json:"holds"`
		NextCursor string `json:"next_cursor,omitempty"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := requireUser(w, r, log)
		if !ok {
			return
		}
		q := r.URL.Query()
		limit, err := httpapi.Limit(q, keyset.DefaultPageSize, keyset.MaxPageSize)
		var holds []Hold
		var next string
		if err == nil {
			holds, next, err = store.ListHolds(r.Context(), user, limit, q.Get("cursor"))
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		if holds == nil {
			holds = []Hold{}
		}
		httpapi.WriteJSON(w, http.StatusOK, page{Holds: holds, NextCursor: next})
	})
}

// handleGetHold answers GET /v1/holds/{id} for the hold's owner.
func handleGetHold(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := requireUser(w, r, log)
		if !ok {
			return
		}
		h, err := store.Hold(r.Context(), r.PathValue("id"), user)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, h)
	})
}

// handleReleaseHold answers DELETE /v1/holds/{id} for the hold's owner with the released
// hold. Repeating it answers the same; a confirmed hold is a 409.
func handleReleaseHold(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := requireUser(w, r, log)
		if !ok {
			return
		}
		h, err := store.ReleaseHold(r.Context(), r.PathValue("id"), user)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, h)
	})
}

// handlePutSeatMap answers PUT /v1/admin/events/{id}/seatmap: declares or replaces the
// event's seat map (a Layout) and answers with it.
func handlePutSeatMap(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var l Layout
		if err := httpapi.DecodeJSON(r, &l); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		m, err := store.PutSeatMap(r.Context(), r.PathValue("id"), l)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, m)
	})
}

// requireUser returns the account the gateway verified, or answers 401.
func requireUser(w http.ResponseWriter, r *http.Request, log *slog.Logger) (string, bool) {
	user := identity.FromRequest(r).User
	if user == "" {
		problem.Write(w, r, log, problem.New(problem.Unauthorized, "sign in to see or hold tickets"))
		return "", false
	}
	return user, true
}
