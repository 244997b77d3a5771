package notification

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is notification's whole REST surface; docs/openapi/notification.yaml describes
// the same routes and a test keeps the two equal.
func routes(log *slog.Logger, store *Store) httpapi.Routes {
	return httpapi.Routes{
		{Method: "GET", Pattern: "/v1/notifications", Handler: handleInbox(log, store)},
	}
}
