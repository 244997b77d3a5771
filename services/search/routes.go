package search

import (
	"log/slog"

	"boxoffice.dev/platform/httpapi"
)

// routes is the search service's whole REST surface. docs/openapi/search.yaml describes
// the same routes, and a test keeps the two equal.
func routes(log *slog.Logger, index *Index) httpapi.Routes {
	return httpapi.Routes{
		{Method: "GET", Pattern: "/v1/search", Handler: handleSearch(log, index)},
	}
}
