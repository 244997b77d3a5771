package playground

import (
	"io/fs"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/playground/web"
)

// routes is the playground's whole HTTP surface: the JSON API under /api and the embedded
// pages everywhere else.
func routes() httpapi.Routes {
	return httpapi.Routes{
		{Method: "GET", Pattern: "/api/lab", Handler: handleLabAlgorithms()},
		{Method: "POST", Pattern: "/api/lab", Handler: handleLab()},
		{Method: "GET", Pattern: "/", Handler: handleStatic(web.Files)},
	}
}

// handleStatic serves the embedded pages. Scripts are ES modules the browser fetches one by
// one, so caching is left to revalidation (embedded files have no modification time): a
// rebuilt playground is never shown with last version's scripts.
func handleStatic(files fs.FS) http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		fileServer.ServeHTTP(w, r)
	})
}
