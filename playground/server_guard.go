package playground

import (
	"fmt"
	"log/slog"
	"mime"
	"net/http"

	"boxoffice.dev/platform/problem"
)

// guardWrites refuses the requests a page on another site can make a browser send: the
// playground holds the gateway's admin token, so a page open in another tab that could POST
// here could start runs, take services down and attach limits (cross-site request forgery).
// It applies to every method that changes state (all but GET, HEAD and OPTIONS):
//
//   - a browser request from another origin, by Sec-Fetch-Site (cross-site or same-site) or
//     by an Origin whose host is not the request's Host, gets 403 (net/http's
//     CrossOriginProtection);
//   - a request with a body that is not application/json gets 415: a form or a text/plain
//     fetch is sent cross-site without a CORS preflight, a JSON one is not.
//
// Either check alone would do for today's browsers; the two together cover an older browser
// that sends no Sec-Fetch-Site. Requests without Origin and Sec-Fetch-Site (curl, the CLI,
// tests) pass, as do the playground's own pages, which post JSON from the same origin.
func guardWrites(log *slog.Logger) func(http.Handler) http.Handler {
	origins := http.NewCrossOriginProtection()
	origins.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, log, problem.New(problem.Forbidden,
			"cross-origin request refused: the playground changes the system only for its own pages (Origin %q, Sec-Fetch-Site %q)",
			r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")))
	}))
	return func(next http.Handler) http.Handler {
		return origins.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if changesState(r.Method) && hasBody(r) && !isJSON(r.Header.Get("Content-Type")) {
				writeUnsupportedMedia(w, r)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
}

// changesState reports whether method may change state: every method but the safe ones.
func changesState(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// hasBody reports whether r carries a body: a length above zero, or an unknown one (chunked).
// A bodiless POST (curl -X POST …/stop) has no content type to check.
func hasBody(r *http.Request) bool { return r.ContentLength != 0 }

// isJSON reports whether contentType is application/json, with or without parameters.
func isJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && t == "application/json"
}

// writeUnsupportedMedia answers 415 as application/problem+json naming the header; the
// platform's problem codes have no 415, so the details are written directly.
func writeUnsupportedMedia(w http.ResponseWriter, r *http.Request) {
	problem.WriteDetails(w, http.StatusUnsupportedMediaType, problem.Details{
		Type: "about:blank", Title: http.StatusText(http.StatusUnsupportedMediaType), Status: http.StatusUnsupportedMediaType,
		Detail:   fmt.Sprintf("the playground's API takes application/json, not %q", r.Header.Get("Content-Type")),
		Instance: r.URL.Path, Code: problem.Invalid, Field: "Content-Type",
	})
}
