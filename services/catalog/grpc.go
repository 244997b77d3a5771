package catalog

import (
	"context"

	"boxoffice.dev/platform/problem"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
)

// grpcServer serves boxoffice.catalog.v1.Catalog from a Store.
type grpcServer struct {
	catalogv1.UnimplementedCatalogServer
	store *Store
}

var _ catalogv1.CatalogServer = (*grpcServer)(nil)

func (g *grpcServer) GetEvent(ctx context.Context, req *catalogv1.GetEventRequest) (*catalogv1.Event, error) {
	e, err := g.store.Event(ctx, req.GetId())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return eventProto(e), nil
}

func (g *grpcServer) BatchGetEvents(ctx context.Context, req *catalogv1.BatchGetEventsRequest) (*catalogv1.BatchGetEventsResponse, error) {
	found, missing, err := g.store.Events(ctx, req.GetIds())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return &catalogv1.BatchGetEventsResponse{Events: mapSlice(found, eventProto), NotFound: missing}, nil
}

func (g *grpcServer) ListEvents(ctx context.Context, req *catalogv1.ListEventsRequest) (*catalogv1.ListEventsResponse, error) {
	events, next, err := g.store.ListEvents(ctx, filterFrom(req.GetFilter()), int(req.GetPage().GetPageSize()), req.GetPage().GetPageToken())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return &catalogv1.ListEventsResponse{
		Events: mapSlice(events, eventProto),
		Page:   &commonv1.PageResponse{NextPageToken: next},
	}, nil
}

func (g *grpcServer) GetVenue(ctx context.Context, req *catalogv1.GetVenueRequest) (*catalogv1.Venue, error) {
	v, err := g.store.Venue(ctx, req.GetId())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return venueProto(v), nil
}

func (g *grpcServer) BatchGetVenues(ctx context.Context, req *catalogv1.BatchGetVenuesRequest) (*catalogv1.BatchGetVenuesResponse, error) {
	found, missing, err := g.store.Venues(ctx, req.GetIds())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return &catalogv1.BatchGetVenuesResponse{Venues: mapSlice(found, venueProto), NotFound: missing}, nil
}
