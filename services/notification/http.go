package notification

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// DefaultPageSize is the length of an inbox page when the client names none.
const DefaultPageSize = 20

var errSignIn = problem.New(problem.Unauthorized, "the inbox needs a signed-in user")

// handleInbox answers GET /v1/notifications?limit=&cursor= with the caller's messages,
// newest first.
func handleInbox(log *slog.Logger, store *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		account := identity.FromRequest(r).User
		if account == "" {
			problem.Write(w, r, log, errSignIn)
			return
		}
		limit := DefaultPageSize
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				problem.Write(w, r, log, problem.InvalidField("limit", "want an integer from 1 to 100"))
				return
			}
			limit = n
		}
		page, err := store.List(r.Context(), account, limit, r.URL.Query().Get("cursor"))
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(page)
	})
}
