package servicetest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/problem"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
)

// waitroom puts a fan third in line; each Status call moves them one place up, and at the
// front they are admitted with the pass "pass-<user>".
type waitroom struct {
	waitroomv1.UnimplementedWaitroomServer
	d *Data
}

var _ waitroomv1.WaitroomServer = (*waitroom)(nil)

// FirstPosition is where Join puts a fan.
const FirstPosition = 3

func (w *waitroom) Join(ctx context.Context, req *waitroomv1.JoinRequest) (*waitroomv1.QueueStatus, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	w.d.Mu.Lock()
	defer w.d.Mu.Unlock()
	key := u + "/" + req.GetEventId()
	if _, ok := w.d.Positions[key]; !ok {
		w.d.Positions[key] = FirstPosition
	}
	return w.d.queueStatus(u, req.GetEventId()), nil
}

func (w *waitroom) Status(ctx context.Context, req *waitroomv1.StatusRequest) (*waitroomv1.QueueStatus, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	w.d.Mu.Lock()
	defer w.d.Mu.Unlock()
	key := u + "/" + req.GetEventId()
	pos, ok := w.d.Positions[key]
	if !ok {
		return nil, notFound("place in the queue of", req.GetEventId())
	}
	if pos > 0 {
		w.d.Positions[key] = pos - 1
	}
	return w.d.queueStatus(u, req.GetEventId()), nil
}

// queueStatus answers a fan's place. Call with Mu held.
func (d *Data) queueStatus(user, event string) *waitroomv1.QueueStatus {
	pos := d.Positions[user+"/"+event]
	if pos > 0 {
		return &waitroomv1.QueueStatus{EventId: event, State: waitroomv1.QueueState_QUEUE_STATE_WAITING, Position: pos, EstimatedWaitS: 10 * pos}
	}
	return &waitroomv1.QueueStatus{EventId: event, State: waitroomv1.QueueState_QUEUE_STATE_ADMITTED,
		Pass: "pass-" + user, PassExpiresAt: timestamppb.New(d.Now.Add(holdFor))}
}

// order creates pending orders from the fan's holds, priced from the catalog.
type order struct {
	orderv1.UnimplementedOrderServer
	d *Data
}

var _ orderv1.OrderServer = (*order)(nil)

func (o *order) CreateOrder(ctx context.Context, req *orderv1.CreateOrderRequest) (*orderv1.CreateOrderResponse, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetIdempotencyKey() == "" {
		return nil, status.Error(codes.InvalidArgument, "idempotency_key: required")
	}
	o.d.Mu.Lock()
	defer o.d.Mu.Unlock()
	key := u + "/" + req.GetIdempotencyKey()
	if id, ok := o.d.orderKeys[key]; ok {
		existing := o.d.order(id)
		if existing.HoldId != req.GetHoldId() {
			// As the order service answers: its Unprocessable names the key's header.
			return nil, problem.GRPC(&problem.Error{Code: problem.Unprocessable, Field: "Idempotency-Key", Message: "used for another hold"})
		}
		return &orderv1.CreateOrderResponse{Order: proto.CloneOf(existing)}, nil
	}
	h := o.d.hold(req.GetHoldId(), u)
	if h == nil {
		return nil, notFound("hold", req.GetHoldId())
	}
	info := &orderv1.OrderInfo{Id: o.d.newID("ord"), Account: u, HoldId: h.Id, EventId: h.EventId, State: orderv1.OrderState_ORDER_STATE_PENDING,
		Amount: &commonv1.Money{Currency: "BRL"}, CreatedAt: timestamppb.New(o.d.Now), UpdatedAt: timestamppb.New(o.d.Now)}
	for _, t := range h.Tickets {
		price := classPrice(o.d.Event(h.EventId), t.Class)
		info.Lines = append(info.Lines, &orderv1.OrderLine{Class: t.Class, Quantity: t.Quantity, UnitPrice: price})
		info.Amount.Minor += price.GetMinor() * int64(t.Quantity)
	}
	o.d.Orders = append(o.d.Orders, info)
	o.d.orderKeys[key] = info.Id
	return &orderv1.CreateOrderResponse{Order: proto.CloneOf(info), Created: true}, nil
}

func (o *order) GetOrder(ctx context.Context, req *orderv1.GetOrderRequest) (*orderv1.OrderInfo, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	o.d.Mu.Lock()
	defer o.d.Mu.Unlock()
	if info := o.d.order(req.GetId()); info != nil && info.Account == u {
		return proto.CloneOf(info), nil
	}
	return nil, notFound("order", req.GetId())
}

// ListOrders returns every one of the fan's orders, newest first, in one page.
func (o *order) ListOrders(ctx context.Context, req *orderv1.ListOrdersRequest) (*orderv1.ListOrdersResponse, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	o.d.Mu.Lock()
	defer o.d.Mu.Unlock()
	resp := &orderv1.ListOrdersResponse{Page: &commonv1.PageResponse{}}
	for i := len(o.d.Orders) - 1; i >= 0; i-- {
		if info := o.d.Orders[i]; info.Account == u {
			resp.Orders = append(resp.Orders, proto.CloneOf(info))
		}
	}
	return resp, nil
}

// order finds an order by id, or nil. Call with Mu held.
func (d *Data) order(id string) *orderv1.OrderInfo {
	for _, info := range d.Orders {
		if info.Id == id {
			return info
		}
	}
	return nil
}

func classPrice(e *catalogv1.Event, class string) *commonv1.Money {
	for _, tc := range e.GetTicketClasses() {
		if tc.Id == class {
			return proto.CloneOf(tc.Price)
		}
	}
	return &commonv1.Money{Currency: "BRL"}
}

// search matches the query as a substring of the title, the city exactly.
type search struct {
	searchv1.UnimplementedSearchServer
	d *Data
}

var _ searchv1.SearchServer = (*search)(nil)

func (s *search) Search(_ context.Context, req *searchv1.SearchRequest) (*searchv1.SearchResponse, error) {
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = 20
	}
	if limit < 0 || limit > 100 {
		return nil, status.Error(codes.InvalidArgument, "limit: want 1 to 100")
	}
	s.d.Mu.Lock()
	defer s.d.Mu.Unlock()
	resp := &searchv1.SearchResponse{Facets: &searchv1.Facets{}}
	cities, months := map[string]int32{}, map[string]int32{}
	for _, e := range s.d.Events {
		if !strings.Contains(strings.ToLower(e.Title), strings.ToLower(req.GetQuery())) || (req.GetCity() != "" && !strings.EqualFold(req.GetCity(), e.City)) {
			continue
		}
		resp.Total++
		cities[e.City]++
		months[e.StartsAt.AsTime().Format("2006-01")]++
		if len(resp.Hits) < limit {
			resp.Hits = append(resp.Hits, &searchv1.Hit{Id: e.Id, Title: e.Title, Performers: e.Performers, VenueId: e.VenueId, City: e.City, Country: e.Country,
				StartsAt: e.StartsAt, MinPrice: minPrice(e), ImageUrl: e.ImageUrl, FlashSale: e.FlashSale, Tags: e.Tags, Score: 1})
		}
	}
	resp.Facets.City, resp.Facets.Month = facet(cities), facet(months)
	resp.Facets.Price = []*searchv1.FacetValue{{Value: "50-100", Count: resp.Total}}
	return resp, nil
}

func facet(counts map[string]int32) []*searchv1.FacetValue {
	var out []*searchv1.FacetValue
	for v, n := range counts {
		out = append(out, &searchv1.FacetValue{Value: v, Count: n})
	}
	slices.SortFunc(out, func(a, b *searchv1.FacetValue) int { return strings.Compare(a.Value, b.Value) })
	return out
}

func minPrice(e *catalogv1.Event) *commonv1.Money {
	var low *commonv1.Money
	for _, tc := range e.TicketClasses {
		if low == nil || tc.Price.Minor < low.Minor {
			low = tc.Price
		}
	}
	return low
}

// notification has two messages for every fan.
type notification struct {
	notificationv1.UnimplementedNotificationServer
	d *Data
}

var _ notificationv1.NotificationServer = (*notification)(nil)

func (n *notification) ListNotifications(ctx context.Context, _ *notificationv1.ListNotificationsRequest) (*notificationv1.ListNotificationsResponse, error) {
	u, err := user(ctx)
	if err != nil {
		return nil, err
	}
	n.d.Mu.Lock()
	defer n.d.Mu.Unlock()
	resp := &notificationv1.ListNotificationsResponse{Page: &commonv1.PageResponse{}}
	for i, kind := range []string{"order.confirmed", "inventory.hold.expired"} {
		resp.Notifications = append(resp.Notifications, &notificationv1.Message{
			Id: fmt.Sprintf("msg-%s-%d", u, i+1), EventId: fmt.Sprintf("nats-%d", i+1), Kind: kind,
			Subject: "About your tickets (" + kind + ")", Body: "Dear fan, " + kind + ".", Push: kind,
			CreatedAt: timestamppb.New(n.d.Now),
		})
	}
	return resp, nil
}

// assistant lists the first three events, whatever the question.
type assistant struct {
	assistantv1.UnimplementedAssistantServer
	d *Data
}

var _ assistantv1.AssistantServer = (*assistant)(nil)

func (a *assistant) Ask(ctx context.Context, req *assistantv1.AskRequest) (*assistantv1.AskResponse, error) {
	if _, err := user(ctx); err != nil {
		return nil, err
	}
	if q := req.GetQuestion(); q == "" || len(q) > 500 {
		return nil, status.Error(codes.InvalidArgument, "question: 1 to 500 characters")
	}
	a.d.Mu.Lock()
	defer a.d.Mu.Unlock()
	resp := &assistantv1.AskResponse{Understood: &assistantv1.Understood{Period: "soon"}}
	for _, e := range a.d.Events[:min(3, len(a.d.Events))] {
		v := a.d.Venues[e.VenueId]
		resp.Events = append(resp.Events, &assistantv1.Suggestion{Id: e.Id, Title: e.Title, StartsAt: e.StartsAt, VenueId: v.Id, VenueName: v.Name, City: e.City, MinPrice: minPrice(e)})
	}
	resp.Answer = fmt.Sprintf("I found %d events for you.", len(resp.Events))
	resp.Tokens = int64(len(req.GetQuestion()) + len(resp.Answer))
	return resp, nil
}
