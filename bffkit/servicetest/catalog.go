package servicetest

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
)

// catalog serves Data's events and venues.
type catalog struct {
	catalogv1.UnimplementedCatalogServer
	d *Data
}

var _ catalogv1.CatalogServer = (*catalog)(nil)

func (c *catalog) GetEvent(_ context.Context, req *catalogv1.GetEventRequest) (*catalogv1.Event, error) {
	c.d.Mu.Lock()
	defer c.d.Mu.Unlock()
	if e := c.d.Event(req.GetId()); e != nil {
		return proto.CloneOf(e), nil
	}
	return nil, notFound("event", req.GetId())
}

func (c *catalog) BatchGetEvents(_ context.Context, req *catalogv1.BatchGetEventsRequest) (*catalogv1.BatchGetEventsResponse, error) {
	if len(req.GetIds()) > 500 {
		return nil, status.Error(codes.InvalidArgument, "ids: at most 500")
	}
	c.d.Mu.Lock()
	defer c.d.Mu.Unlock()
	resp := &catalogv1.BatchGetEventsResponse{}
	for _, id := range req.GetIds() {
		if e := c.d.Event(id); e != nil {
			resp.Events = append(resp.Events, proto.CloneOf(e))
		} else {
			resp.NotFound = append(resp.NotFound, id)
		}
	}
	return resp, nil
}

// ListEvents filters by city only; the page token is the index of the page's first event.
func (c *catalog) ListEvents(_ context.Context, req *catalogv1.ListEventsRequest) (*catalogv1.ListEventsResponse, error) {
	size := int(req.GetPage().GetPageSize())
	if size == 0 {
		size = 20
	}
	if size < 0 || size > 100 {
		return nil, status.Error(codes.InvalidArgument, "page_size: want 1 to 100")
	}
	start := 0
	if tok := req.GetPage().GetPageToken(); tok != "" {
		var err error
		if start, err = strconv.Atoi(tok); err != nil || start < 0 {
			return nil, status.Error(codes.InvalidArgument, "page_token: not one of ours")
		}
	}
	c.d.Mu.Lock()
	defer c.d.Mu.Unlock()
	var matched []*catalogv1.Event
	for _, e := range c.d.Events {
		if city := req.GetFilter().GetCity(); city == "" || strings.EqualFold(city, e.City) {
			matched = append(matched, e)
		}
	}
	resp := &catalogv1.ListEventsResponse{Page: &commonv1.PageResponse{}}
	for i := start; i < len(matched) && i < start+size; i++ {
		resp.Events = append(resp.Events, proto.CloneOf(matched[i]))
	}
	if start+size < len(matched) {
		resp.Page.NextPageToken = strconv.Itoa(start + size)
	}
	return resp, nil
}

func (c *catalog) GetVenue(_ context.Context, req *catalogv1.GetVenueRequest) (*catalogv1.Venue, error) {
	c.d.Mu.Lock()
	defer c.d.Mu.Unlock()
	if v, ok := c.d.Venues[req.GetId()]; ok {
		return proto.CloneOf(v), nil
	}
	return nil, notFound("venue", req.GetId())
}

func (c *catalog) BatchGetVenues(_ context.Context, req *catalogv1.BatchGetVenuesRequest) (*catalogv1.BatchGetVenuesResponse, error) {
	c.d.Mu.Lock()
	defer c.d.Mu.Unlock()
	resp := &catalogv1.BatchGetVenuesResponse{}
	for _, id := range req.GetIds() {
		if v, ok := c.d.Venues[id]; ok {
			resp.Venues = append(resp.Venues, proto.CloneOf(v))
		} else {
			resp.NotFound = append(resp.NotFound, id)
		}
	}
	return resp, nil
}
