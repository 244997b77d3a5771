// Package bffmobile is BoxOffice's bff-mobile: the GraphQL backend-for-frontend shaped for the
// phone app, a small screen on a slow network. One query per screen (the feed of event cards,
// the event screen, the fan's holds and orders, the waiting room), answers cut to what a
// phone shows, short deadlines on every service call, and partial answers when a service
// that is not essential to a screen is down.
//
// It is a thin layer: each field is one service call or one dataloader batch (catalog,
// inventory, waitroom and order over gRPC). Authentication and rate limits stay in the
// gateway in front of it, which forwards who the fan is in headers. The schema is
// graph/schema.graphqls; README.md says how it compares with bff-web.
package bffmobile

import (
	"net/http"

	"boxoffice.dev/bff-mobile/graph"
	"boxoffice.dev/bffkit/graphqlserver"
	"boxoffice.dev/bffkit/loaders"
)

// Path is where bff-mobile serves GraphQL, the path the gateway forwards unchanged.
const Path = "/graphql/mobile"

// GraphiQLPath is where bff-mobile serves GraphiQL when enabled: beside Path rather than on it,
// so the gateway lets the page through without a token while Path still wants one.
const GraphiQLPath = "/graphiql/mobile"

// Handler is bff-mobile's GraphQL endpoint over res: the platform's GraphQL server (limits,
// persisted queries, the gateway's caller) with a request's dataloaders in front of it. Its
// writes are its mutations, one per operation; every query only reads (queue polls).
func Handler(res *graph.Resolver, o graphqlserver.Options, lo loaders.Options) http.Handler {
	return loaders.Middleware(res.Catalog, res.Inventory, lo)(graphqlserver.New(graph.NewSchema(res), o))
}
