package order

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/problem"
)

// grpcServer is the Order gRPC API over Service; thin: it converts messages and errors.
type grpcServer struct {
	orderv1.UnimplementedOrderServer
	orders *Service
}

var _ orderv1.OrderServer = (*grpcServer)(nil)

func (g *grpcServer) CreateOrder(ctx context.Context, req *orderv1.CreateOrderRequest) (*orderv1.CreateOrderResponse, error) {
	o, created, err := g.orders.Place(ctx, CreateRequest{
		Account: identity.FromIncomingContext(ctx).User, IdempotencyKey: req.GetIdempotencyKey(), HoldID: req.GetHoldId(),
	})
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return &orderv1.CreateOrderResponse{Order: orderToProto(o), Created: created}, nil
}

func (g *grpcServer) GetOrder(ctx context.Context, req *orderv1.GetOrderRequest) (*orderv1.OrderInfo, error) {
	o, err := g.orders.Get(ctx, identity.FromIncomingContext(ctx).User, req.GetId())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return orderToProto(o), nil
}

func (g *grpcServer) ListOrders(ctx context.Context, req *orderv1.ListOrdersRequest) (*orderv1.ListOrdersResponse, error) {
	page, err := g.orders.List(ctx, identity.FromIncomingContext(ctx).User, int(req.GetPage().GetPageSize()), req.GetPage().GetPageToken())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	res := &orderv1.ListOrdersResponse{Page: &commonv1.PageResponse{NextPageToken: page.Next}}
	for _, o := range page.Orders {
		res.Orders = append(res.Orders, orderToProto(o))
	}
	return res, nil
}

var stateToProto = map[State]orderv1.OrderState{
	Pending: orderv1.OrderState_ORDER_STATE_PENDING, Charging: orderv1.OrderState_ORDER_STATE_CHARGING,
	Charged: orderv1.OrderState_ORDER_STATE_CHARGED, Confirming: orderv1.OrderState_ORDER_STATE_CONFIRMING,
	Confirmed: orderv1.OrderState_ORDER_STATE_CONFIRMED, Releasing: orderv1.OrderState_ORDER_STATE_RELEASING,
	Refunding: orderv1.OrderState_ORDER_STATE_REFUNDING, Failed: orderv1.OrderState_ORDER_STATE_FAILED,
}

func orderToProto(o Order) *orderv1.OrderInfo {
	pb := &orderv1.OrderInfo{
		Id: o.ID, Account: o.Account, HoldId: o.HoldID, EventId: o.EventID,
		Amount: &commonv1.Money{Currency: o.Amount.Currency, Minor: o.Amount.Minor},
		State:  stateToProto[o.State], FailureReason: o.FailureReason, ChargeId: o.ChargeID,
		CreatedAt: timestamppb.New(o.CreatedAt), UpdatedAt: timestamppb.New(o.UpdatedAt),
	}
	for _, l := range o.Lines {
		pb.Lines = append(pb.Lines, &orderv1.OrderLine{Class: l.Class, Quantity: int32(l.Quantity),
			UnitPrice: &commonv1.Money{Currency: l.UnitPrice.Currency, Minor: l.UnitPrice.Minor}})
	}
	return pb
}
