package payment

import (
	"log/slog"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

// DefaultPageSize is the length of a page of charges when the client names none,
// MaxPageSize the longest a client may ask for.
const (
	DefaultPageSize = 100
	MaxPageSize     = 500
)

// handleListCharges answers GET /v1/admin/charges?order_id=&limit=&cursor= with a page of
// charges, oldest first: what tests and the playground read to count charges per order.
func handleListCharges(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, err := httpapi.Limit(q, DefaultPageSize, MaxPageSize)
		var page Page
		if err == nil {
			page, err = store.List(r.Context(), q.Get("order_id"), limit, q.Get("cursor"))
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, page)
	})
}
