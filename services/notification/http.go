package notification

import (
	"log/slog"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb/keyset"
)

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
		limit, err := httpapi.Limit(r.URL.Query(), keyset.DefaultPageSize, keyset.MaxPageSize)
		var page Page
		if err == nil {
			page, err = store.List(r.Context(), account, limit, r.URL.Query().Get("cursor"))
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, page)
	})
}
