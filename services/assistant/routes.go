package assistant

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is the assistant's whole REST surface. docs/openapi/assistant.yaml describes
// the same routes, and a test keeps the two equal.
func routes(log *slog.Logger, a *Assistant) httpapi.Routes {
	return httpapi.Routes{
		{Method: "POST", Pattern: "/v1/assistant/ask", Handler: handleAsk(log, a)},
	}
}
