package order

import (
	"log/slog"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb/keyset"
)

// handlePlace answers POST /v1/orders {"hold_id"} with Idempotency-Key: 201 with a new
// pending order, or 200 with the order an earlier request with the same key created (marked
// Idempotent-Replayed: true), as it is now.
func handlePlace(log *slog.Logger, orders *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := CreateRequest{Account: identity.FromRequest(r).User, IdempotencyKey: r.Header.Get(IdempotencyKeyHeader)}
		if req.Account == "" {
			problem.Write(w, r, log, problem.New(problem.Unauthorized, "ordering needs a signed-in user"))
			return
		}
		var body struct {
			HoldID string `json:"hold_id"`
		}
		if err := httpapi.DecodeJSON(r, &body); err != nil {
			problem.Write(w, r, log, err)
			return
		}
		req.HoldID = body.HoldID
		o, created, err := orders.Place(r.Context(), req)
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteCreated(w, "/v1/orders/"+o.ID, created, o)
	})
}

// handleGet answers GET /v1/orders/{id} for the order's owner.
func handleGet(log *slog.Logger, orders *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, err := orders.Get(r.Context(), identity.FromRequest(r).User, r.PathValue("id"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, o)
	})
}

// handleList answers GET /v1/orders?limit=&cursor= with the caller's history, newest first.
func handleList(log *slog.Logger, orders *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, err := httpapi.Limit(r.URL.Query(), keyset.DefaultPageSize, keyset.MaxPageSize)
		var page Page
		if err == nil {
			page, err = orders.List(r.Context(), identity.FromRequest(r).User, limit, r.URL.Query().Get("cursor"))
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, page)
	})
}
