package payment

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/status"

	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	paymentv1 "boxoffice.dev/proto/boxoffice/payment/v1"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

// grpcServer is the Payment gRPC API over a Store; thin: it converts messages and errors.
type grpcServer struct {
	paymentv1.UnimplementedPaymentServer
	store   *Store
	late    *LateAnswers        // nil = always answer at once
	charges metric.Int64Counter // new charges by status
}

var _ paymentv1.PaymentServer = (*grpcServer)(nil)

func (g *grpcServer) Charge(ctx context.Context, req *paymentv1.ChargeRequest) (*paymentv1.ChargeResponse, error) {
	c, created, err := g.store.Charge(ctx, ChargeRequest{
		IdempotencyKey: req.GetIdempotencyKey(), OrderID: req.GetOrderId(), Account: req.GetAccount(),
		Amount: money.Money{Currency: req.GetAmount().GetCurrency(), Minor: req.GetAmount().GetMinor()},
	})
	if err != nil {
		return nil, problem.GRPC(err)
	}
	if created {
		g.charges.Add(ctx, 1, metric.WithAttributes(attribute.String("status", string(c.Status))))
	}
	if err := g.late.Wait(ctx); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	pb := chargeToProto(c)
	return &paymentv1.ChargeResponse{ChargeId: c.ID, Status: pb.Status, Charge: pb}, nil
}

func (g *grpcServer) Refund(ctx context.Context, req *paymentv1.RefundRequest) (*paymentv1.RefundResponse, error) {
	c, err := g.store.Refund(ctx, RefundRequest{
		ChargeID: req.GetChargeId(), IdempotencyKey: req.GetIdempotencyKey(), OrderID: req.GetOrderId(), Reason: req.GetReason(),
	})
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return &paymentv1.RefundResponse{Charge: chargeToProto(c)}, nil
}

func (g *grpcServer) GetCharge(ctx context.Context, req *paymentv1.GetChargeRequest) (*paymentv1.GetChargeResponse, error) {
	c, err := g.store.Get(ctx, req.GetChargeId(), req.GetIdempotencyKey())
	if err != nil {
		return nil, problem.GRPC(err)
	}
	return &paymentv1.GetChargeResponse{Charge: chargeToProto(c)}, nil
}

var statusToProto = map[Status]paymentv1.ChargeStatus{
	Succeeded: paymentv1.ChargeStatus_CHARGE_STATUS_SUCCEEDED,
	Declined:  paymentv1.ChargeStatus_CHARGE_STATUS_DECLINED,
	Refunded:  paymentv1.ChargeStatus_CHARGE_STATUS_REFUNDED,
	Voided:    paymentv1.ChargeStatus_CHARGE_STATUS_VOIDED,
}

func chargeToProto(c Charge) *paymentv1.Charge {
	return &paymentv1.Charge{
		ChargeId: c.ID, IdempotencyKey: c.IdempotencyKey, OrderId: c.OrderID, Account: c.Account,
		Amount: &commonv1.Money{Currency: c.Amount.Currency, Minor: c.Amount.Minor},
		Status: statusToProto[c.Status], DeclineReason: c.DeclineReason,
		CreatedAt: c.CreatedAt.Format(time.RFC3339Nano), UpdatedAt: c.UpdatedAt.Format(time.RFC3339Nano),
	}
}
