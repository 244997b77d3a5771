package graphqlserver

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

// GraphiQL is the GraphiQL page of one GraphQL endpoint, served with its assets by the BFF
// itself: no CDN, so it works offline (a classroom); its pinned files are those
// graphiql/README.md names. The page loads without a token; its headers editor opens on
// {"Authorization": "Bearer <paste …>"}, where a fan's token goes through the gateway. The
// zero value is not usable: Path and Endpoint are required.
type GraphiQL struct {
	// Title names the page; "" = "GraphQL".
	Title string
	// Path is where the page is served, its assets beneath it (Path+"/graphiql.min.js"):
	// a path of its own, not the endpoint's, so a gateway can let the page through without a
	// token while the endpoint still wants one.
	Path string
	// Endpoint is the path the page posts its queries to.
	Endpoint string
}

//go:embed graphiql/page.html graphiql/assets
var graphiqlFiles embed.FS

// graphiqlPage is the page; it loads only the assets beneath its own Path.
var graphiqlPage = template.Must(template.ParseFS(graphiqlFiles, "graphiql/page.html"))

// AuthorizationPlaceholder is the headers editor's Authorization until a token is pasted.
const AuthorizationPlaceholder = "Bearer <paste the token from POST /v1/auth/login>"

// Register routes GET Path (the page) and GET Path/{asset} on mux.
func (g GraphiQL) Register(mux *http.ServeMux) {
	h := g.Handler()
	mux.Handle("GET "+g.Path, h)
	mux.Handle("GET "+g.Path+"/{asset}", h)
}

// Handler serves the page at Path and each asset at Path/{name}; anything else is a 404.
// The handler is safe for concurrent use.
func (g GraphiQL) Handler() http.Handler {
	if g.Title == "" {
		g.Title = "GraphQL"
	}
	// The editor shows this text as it is: "<paste …>", not JSON's HTML-safe "\u003cpaste …".
	var headers strings.Builder
	enc := json.NewEncoder(&headers)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(map[string]string{"Authorization": AuthorizationPlaceholder}) // a map of strings: cannot fail
	data := map[string]string{"Title": g.Title, "Path": g.Path, "Endpoint": g.Endpoint, "Headers": strings.TrimSpace(headers.String())}
	assets := loadAssets()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.URL.Path == g.Path {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			graphiqlPage.Execute(w, data) // strings into a fixed template: only a write can fail, when the browser has gone
			return
		}
		name, _ := strings.CutPrefix(r.URL.Path, g.Path+"/")
		a, ok := assets[name]
		if !ok || !strings.HasPrefix(r.URL.Path, g.Path+"/") {
			http.NotFound(w, r)
			return
		}
		// Revalidated on every load, answered 304 while the file is the same: a BFF upgraded
		// to another GraphiQL never leaves a browser on a stale copy.
		w.Header().Set("ETag", a.etag)
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.data))
	})
}

type asset struct {
	data []byte
	etag string
}

// loadAssets reads the embedded assets by name, each with the ETag of its content.
func loadAssets() map[string]asset {
	entries, _ := fs.ReadDir(graphiqlFiles, "graphiql/assets") // embedded: cannot fail
	assets := make(map[string]asset, len(entries))
	for _, e := range entries {
		data, _ := fs.ReadFile(graphiqlFiles, "graphiql/assets/"+e.Name())
		sum := sha256.Sum256(data)
		assets[e.Name()] = asset{data: data, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	}
	return assets
}
