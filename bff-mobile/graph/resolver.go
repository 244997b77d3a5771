package graph

//go:generate go tool gqlgen generate

import (
	"context"

	"github.com/99designs/gqlgen/graphql"

	"boxoffice.dev/bff-mobile/graph/model"
	"boxoffice.dev/bffkit/loaders"
	"boxoffice.dev/bffkit/protoconv"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
)

// Resolver is the root of bff-mobile's resolvers and what they depend on: a gRPC client per
// service, each dialled with its (short) deadline and telemetry (platform/grpcclient); the
// caller's identity rides on every call from the request's context
// (bffkit/graphqlserver). It holds no request state, and is safe for concurrent use:
// dataloaders live in each request's context (bffkit/loaders).
type Resolver struct {
	Catalog   catalogv1.CatalogClient
	Inventory inventoryv1.InventoryClient
	Waitroom  waitroomv1.WaitroomClient
	Orders    orderv1.OrderClient
}

// NewSchema is the executable schema over r, with the costs the complexity limit weighs.
func NewSchema(r *Resolver) graphql.ExecutableSchema {
	cfg := Config{Resolvers: r}
	weigh(&cfg.Complexity)
	return NewExecutableSchema(cfg)
}

// callCost is what a field calling a service alone costs beyond gqlgen's one per field; a
// list costs its children once per item asked for.
const callCost = 10

func weigh(c *ComplexityRoot) {
	c.Query.Feed = func(child int, _ *string, first int, _ *string) int { return callCost + first*child }
	c.Query.Event = func(child int, _ string) int { return callCost + child }
	c.Query.MyHolds = func(child, first int, _ *string) int { return callCost + first*child }
	c.Query.MyOrders = func(child, first int, _ *string) int { return callCost + first*child }
	c.Query.Queue = func(child int, _ string) int { return callCost + child }
}

// maxPage is the largest page a list gives: a phone shows a few cards at a time, and a
// smaller page is a faster first screen on a slow network.
const maxPage = 50

// loaders is the request's dataloaders; outside the handler's middleware (a caller that
// built the schema alone), loaders of its own, correct but batching nothing across fields.
func (r *Resolver) loaders(ctx context.Context) *loaders.Loaders {
	if l := loaders.FromContext(ctx); l != nil {
		return l
	}
	return loaders.New(r.Catalog, r.Inventory, loaders.Options{})
}

// venueName is a card's or a screen's venue name, through the venue loader.
func (r *Resolver) venueName(ctx context.Context, venueID string) (*string, error) {
	v, err := r.loaders(ctx).Venues.Load(ctx, venueID)
	if err != nil {
		return nil, err
	}
	name := v.GetName()
	return &name, nil
}

// availability is an event's coarse level, through the availability loader.
func (r *Resolver) availability(ctx context.Context, eventID string) (*model.Availability, error) {
	a, err := r.loaders(ctx).Availability.Load(ctx, eventID)
	if err != nil {
		return nil, err
	}
	level, err := protoconv.Enum[model.Availability](a.GetLevel(), "AVAILABILITY_LEVEL_")
	if err != nil {
		return nil, err
	}
	return &level, nil
}

// eventTitle is a hold's or an order's event title, through the event loader.
func (r *Resolver) eventTitle(ctx context.Context, eventID string) (*string, error) {
	e, err := r.loaders(ctx).Events.Load(ctx, eventID)
	if err != nil {
		return nil, err
	}
	title := e.GetTitle()
	return &title, nil
}
