// Package httpapi is what every BoxOffice service's REST API is made of: one route table,
// JSON in and out, and the page size of lists (limit). The paging cursor is a store's concern
// and lives beside the database code (platform/sqldb/keyset).
//
// It is the application side of HTTP; httpserver is the process side (timeouts, framing,
// graceful stop, refusing bad text before any handler), which every process uses, REST API
// or not (the gateway, the BFFs).
//
// JSON comes in through DecodeJSON and goes out through WriteJSON. Errors are not here:
// DecodeJSON and Limit return problems (platform/problem) naming the field at fault, which
// handlers answer with problem.Write like any other.
package httpapi

import "net/http"

// Route is one entry of a route table: requests with Method whose path matches Pattern (a
// net/http pattern such as /v1/events/{id}) go to Handler.
type Route struct {
	Method  string
	Pattern string
	Handler http.Handler
}

// Routes is a service's whole REST surface, written once (routes.go) so that serving it and
// checking it against its OpenAPI description read the same list.
type Routes []Route

// Mux returns a ServeMux serving every route. Like http.ServeMux.Handle it panics on an
// invalid or conflicting pattern: a route table that cannot be served is a bug found at start.
func (rs Routes) Mux() *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range rs {
		mux.Handle(r.Method+" "+r.Pattern, r.Handler)
	}
	return mux
}

// Endpoints lists the routes as "METHOD /pattern", in table order, for comparing with a
// description of the API (testkit.CheckOpenAPI). Handlers are not called, so a table built
// with nil dependencies lists the same endpoints.
func (rs Routes) Endpoints() []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Method + " " + r.Pattern
	}
	return out
}
