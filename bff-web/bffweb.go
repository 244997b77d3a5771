// Package bffweb is BoxOffice's bff-web: the GraphQL backend-for-frontend shaped for the web
// app, a large screen on a good connection. One query gives the whole event page (venue
// details and every seat of the seat map); search comes with facets; a fan's orders, holds,
// inbox and the assistant sit under `me` and `ask`.
//
// It is a thin layer: each field is one service call or one dataloader batch (catalog,
// inventory, order, search, notification, assistant over gRPC). Authentication and rate
// limits stay in the gateway in front of it, which forwards who the fan is in headers.
// The schema is graph/schema.graphqls; README.md says how it compares with bff-mobile.
package bffweb

import (
	"net/http"
	"strconv"

	"boxoffice.dev/bff-web/graph"
	"boxoffice.dev/bffkit/graphqlserver"
	"boxoffice.dev/bffkit/loaders"
)

// Path is where bff-web serves GraphQL, the path the gateway forwards unchanged.
const Path = "/graphql/web"

// GraphiQLPath is where bff-web serves GraphiQL when enabled: beside Path rather than on it,
// so the gateway lets the page through without a token while Path still wants one.
const GraphiQLPath = "/graphiql/web"

// Handler is bff-web's GraphQL endpoint over res: the platform's GraphQL server (limits,
// persisted queries, the gateway's caller) with a request's dataloaders in front of it, and
// the assistant tokens its answer cost in the graph.TokensHeader response header. Whatever
// o.WriteQueries holds, it is graph.WriteQueries: the schema knows which queries act.
func Handler(res *graph.Resolver, o graphqlserver.Options, lo loaders.Options) http.Handler {
	o.WriteQueries = graph.WriteQueries
	return reportTokens(loaders.Middleware(res.Catalog, res.Inventory, lo)(graphqlserver.New(graph.NewSchema(res), o)))
}

// reportTokens gives each request a token meter and sets graph.TokensHeader from it when the
// answer starts: a GraphQL answer is written whole, after every resolver has run.
func reportTokens(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, m := graph.WithMeter(r.Context())
		next.ServeHTTP(&meteredWriter{ResponseWriter: w, meter: m}, r.WithContext(ctx))
	})
}

// meteredWriter sets the tokens header before the status line goes out.
type meteredWriter struct {
	http.ResponseWriter
	meter   *graph.Meter
	started bool
}

func (w *meteredWriter) WriteHeader(status int) {
	if !w.started {
		w.started = true
		if n := w.meter.Tokens(); n > 0 {
			w.Header().Set(graph.TokensHeader, strconv.FormatInt(n, 10))
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *meteredWriter) Write(b []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}
