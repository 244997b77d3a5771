package order

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// DefaultPageSize is the length of an order history page when the client names none.
const DefaultPageSize = 20

// handlePlace answers POST /v1/orders {"hold_id"} with Idempotency-Key: 201 with a new
// pending order, or 200 with the order an earlier request with the same key created (marked
// Idempotent-Replayed: true), as it is now.
func handlePlace(log *slog.Logger, orders *Orders) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := CreateRequest{Account: identity.FromRequest(r).User, IdempotencyKey: r.Header.Get(IdempotencyKeyHeader)}
		if req.Account == "" {
			problem.Write(w, r, log, problem.New(problem.Unauthorized, "ordering needs a signed-in user"))
			return
		}
		var body struct {
			HoldID string `json:"hold_id"`
		}
		if err := problem.DecodeJSON(r, &body); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		req.HoldID = body.HoldID
		o, created, err := orders.Place(r.Context(), req)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		status := http.StatusCreated
		if !created {
			status = http.StatusOK
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Location", "/v1/orders/"+o.ID)
		writeJSON(w, status, o)
	})
}

// handleGet answers GET /v1/orders/{id} for the order's owner.
func handleGet(log *slog.Logger, orders *Orders) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, err := orders.Get(r.Context(), identity.FromRequest(r).User, r.PathValue("id"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, o)
	})
}

// handleList answers GET /v1/orders?limit=&cursor= with the caller's history, newest first.
func handleList(log *slog.Logger, orders *Orders) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := DefaultPageSize
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				problem.Write(w, r, log, problem.InvalidField("limit", "want an integer from 1 to 100"))
				return
			}
			limit = n
		}
		page, err := orders.List(r.Context(), identity.FromRequest(r).User, limit, r.URL.Query().Get("cursor"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, page)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
