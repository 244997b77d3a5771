package waitroom

import (
	"log/slog"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// handleJoin answers POST /v1/events/{id}/queue: joins the caller (or finds them) and
// answers their place, with the pass once admitted. Joining twice is harmless.
func handleJoin(log *slog.Logger, q *Queue) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := q.Join(r.Context(), r.PathValue("id"), identity.FromRequest(r).User)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, st)
	})
}

// handleStatus answers GET /v1/events/{id}/queue/me: the caller's place, with the pass once
// admitted. Clients poll it; it changes nothing.
func handleStatus(log *slog.Logger, q *Queue) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := q.Status(r.Context(), r.PathValue("id"), identity.FromRequest(r).User)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, st)
	})
}

// handleGetSettings answers GET /v1/admin/events/{id}/queue: the rate and the queue's size.
func handleGetSettings(log *slog.Logger, q *Queue) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := q.Settings(r.Context(), r.PathValue("id"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, s)
	})
}

// handlePutSettings answers PUT /v1/admin/events/{id}/queue {"admit_per_second": n}: sets
// the admission rate (0 pauses) for every replica at once, since it lives in Redis.
func handlePutSettings(log *slog.Logger, q *Queue) http.Handler {
	type body struct {
		AdmitPerSecond *int `json:"admit_per_second"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b body
		if err := httpapi.DecodeJSON(r, &b); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		if b.AdmitPerSecond == nil {
			problem.Write(w, r, log, problem.InvalidField("admit_per_second", "required"))
			return
		}
		event := r.PathValue("id")
		if err := q.SetRate(r.Context(), event, *b.AdmitPerSecond); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		s, err := q.Settings(r.Context(), event)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, s)
	})
}
