package playground

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/playground/web"
)

// handler serves routes behind guardWrites: what the process serves.
func handler(ctx context.Context, rs *runs, log *slog.Logger) http.Handler {
	return guardWrites(log)(routes(ctx, rs).Mux())
}

// routes is the playground's whole HTTP surface: the JSON API under /api and the embedded
// pages everywhere else. ctx is the process's; event streams end with it.
func routes(ctx context.Context, rs *runs) httpapi.Routes {
	return httpapi.Routes{
		{Method: "GET", Pattern: "/api/scenarios", Handler: handleScenarios(rs)},
		{Method: "GET", Pattern: "/api/runs", Handler: handleListRuns(rs)},
		{Method: "POST", Pattern: "/api/runs", Handler: handleStartRun(rs)},
		{Method: "GET", Pattern: "/api/runs/{id}", Handler: handleGetRun(rs)},
		{Method: "GET", Pattern: "/api/runs/{id}/events", Handler: handleRunEvents(ctx, rs)},
		{Method: "POST", Pattern: "/api/runs/{id}/knobs", Handler: handleSetKnob(rs)},
		{Method: "POST", Pattern: "/api/runs/{id}/stop", Handler: handleStopRun(rs)},
		{Method: "GET", Pattern: "/api/lab", Handler: handleLabAlgorithms()},
		{Method: "POST", Pattern: "/api/lab", Handler: handleLab()},
		{Method: "GET", Pattern: "/", Handler: handleStatic(web.Files)},
	}
}

// handleStatic serves the embedded pages. Scripts are ES modules the browser fetches one by
// one, so caching is left to revalidation (embedded files have no modification time): a
// rebuilt playground is never shown with last version's scripts. The content security
// policy holds the pages to what is embedded: nothing is fetched from elsewhere.
func handleStatic(files fs.FS) http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'")
		fileServer.ServeHTTP(w, r)
	})
}
