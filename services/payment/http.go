package payment

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"boxoffice.dev/platform/problem"
)

// handleListCharges answers GET /v1/admin/charges?order_id=&limit=&cursor= with a page of
// charges, oldest first: what tests and the playground read to count charges per order.
func handleListCharges(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit := 100
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 500 {
				problem.Write(w, r, log, problem.InvalidField("limit", "want an integer from 1 to 500"))
				return
			}
			limit = n
		}
		page, err := store.List(r.Context(), q.Get("order_id"), limit, q.Get("cursor"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(page)
	})
}
