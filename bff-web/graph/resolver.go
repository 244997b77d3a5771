package graph

//go:generate go tool gqlgen generate

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"boxoffice.dev/bffkit/loaders"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
)

// Resolver is the root of bff-web's resolvers and what they depend on: a gRPC client per
// service, each dialled with its deadline and telemetry (platform/grpcclient); the caller's
// identity rides on every call from the request's context (bffkit/graphqlserver). It holds
// no request state, and is safe for concurrent use: dataloaders live in each request's
// context (bffkit/loaders).
type Resolver struct {
	Catalog       catalogv1.CatalogClient
	Inventory     inventoryv1.InventoryClient
	Orders        orderv1.OrderClient
	Search        searchv1.SearchClient
	Notifications notificationv1.NotificationClient
	Assistant     assistantv1.AssistantClient
}

// NewSchema is the executable schema over r, with the costs the complexity limit weighs.
func NewSchema(r *Resolver) graphql.ExecutableSchema {
	cfg := Config{Resolvers: r}
	weigh(&cfg.Complexity)
	return NewExecutableSchema(cfg)
}

// WriteQueries are the Query fields that act rather than read: ask spends the fan's
// assistant tokens. With the mutations, they are the writes an operation may carry one of
// (graphqlserver.OneWrite), so one request is one question, as on the assistant's REST route.
var WriteQueries = []string{"ask"}

// The costs of the complexity limit, beyond gqlgen's one per field. A field that calls a
// service alone costs callCost; a list costs its children once per item asked for; a seat
// map is one call but hundreds of seats to send.
const (
	callCost    = 10
	askCost     = 50
	seatMapCost = 200
)

func weigh(c *ComplexityRoot) {
	c.Query.Search = func(child int, _ string, _ *string, first int) int { return callCost + first*child }
	c.Query.Event = func(child int, _ string) int { return callCost + child }
	c.Query.Ask = func(child int, _ string) int { return askCost + child }
	c.Me.Orders = func(child, first int, _ *string) int { return callCost + first*child }
	c.Me.Holds = func(child, first int, _ *string) int { return callCost + first*child }
	c.Me.Notifications = func(child, first int, _ *string) int { return callCost + first*child }
	c.Event.SeatMap = func(child int) int { return seatMapCost + child }
}

// loaders is the request's dataloaders; outside the handler's middleware (a caller that
// built the schema alone), loaders of its own, correct but batching nothing across fields.
func (r *Resolver) loaders(ctx context.Context) *loaders.Loaders {
	if l := loaders.FromContext(ctx); l != nil {
		return l
	}
	return loaders.New(r.Catalog, r.Inventory, loaders.Options{})
}

// maxPage is the largest page any list field gives.
const maxPage = 100
