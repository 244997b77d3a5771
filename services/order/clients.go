package order

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	paymentv1 "boxoffice.dev/proto/boxoffice/payment/v1"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

// The gRPC adapters of the saga's dependencies. Each is thin: it converts messages and turns
// gRPC errors back into problems (problem.FromGRPC), so the saga tells a refusal from an
// outage by code. Deadlines are the caller's.

// inventoryHolds is Holds over the inventory gRPC API. Calls carry no user identity: the
// saga acts for the system, which inventory trusts with any hold.
type inventoryHolds struct{ client inventoryv1.InventoryClient }

var _ Holds = inventoryHolds{}

func newInventoryHolds(conn grpc.ClientConnInterface) inventoryHolds {
	return inventoryHolds{inventoryv1.NewInventoryClient(conn)}
}

func (c inventoryHolds) GetHold(ctx context.Context, id string) (Hold, error) {
	h, err := c.client.GetHold(ctx, &inventoryv1.GetHoldRequest{HoldId: id})
	return holdFromProto(h, err)
}

func (c inventoryHolds) ConfirmHold(ctx context.Context, id string) (Hold, error) {
	h, err := c.client.ConfirmHold(ctx, &inventoryv1.ConfirmHoldRequest{HoldId: id})
	return holdFromProto(h, err)
}

func (c inventoryHolds) ReleaseHold(ctx context.Context, id string) (Hold, error) {
	h, err := c.client.ReleaseHold(ctx, &inventoryv1.ReleaseHoldRequest{HoldId: id})
	return holdFromProto(h, err)
}

var holdStatuses = map[inventoryv1.HoldStatus]HoldStatus{
	inventoryv1.HoldStatus_HOLD_STATUS_ACTIVE:    HoldActive,
	inventoryv1.HoldStatus_HOLD_STATUS_CONFIRMED: HoldConfirmed,
	inventoryv1.HoldStatus_HOLD_STATUS_RELEASED:  HoldReleased,
	inventoryv1.HoldStatus_HOLD_STATUS_EXPIRED:   HoldExpired,
}

func holdFromProto(h *inventoryv1.Hold, err error) (Hold, error) {
	if err != nil {
		return Hold{}, problem.FromGRPC(err)
	}
	status, ok := holdStatuses[h.GetStatus()]
	if !ok {
		return Hold{}, fmt.Errorf("hold %s: unknown status %v", h.GetId(), h.GetStatus())
	}
	out := Hold{ID: h.GetId(), EventID: h.GetEventId(), Account: h.GetAccount(), Status: status,
		ExpiresAt: h.GetExpiresAt().AsTime()}
	for _, t := range h.GetTickets() {
		out.Tickets = append(out.Tickets, Tickets{Class: t.GetClass(), Quantity: int(t.GetQuantity())})
	}
	return out, nil
}

// paymentClient is Payments over the payment gRPC API.
type paymentClient struct{ client paymentv1.PaymentClient }

var _ Payments = paymentClient{}

func newPaymentClient(conn grpc.ClientConnInterface) paymentClient {
	return paymentClient{paymentv1.NewPaymentClient(conn)}
}

func (c paymentClient) Charge(ctx context.Context, key string, o Order) (Charge, error) {
	res, err := c.client.Charge(ctx, &paymentv1.ChargeRequest{IdempotencyKey: key, OrderId: o.ID, Account: o.Account,
		Amount: &commonv1.Money{Currency: o.Amount.Currency, Minor: o.Amount.Minor}})
	return chargeFromProto(res.GetCharge(), err)
}

func (c paymentClient) GetCharge(ctx context.Context, key string) (Charge, error) {
	res, err := c.client.GetCharge(ctx, &paymentv1.GetChargeRequest{IdempotencyKey: key})
	return chargeFromProto(res.GetCharge(), err)
}

func (c paymentClient) Refund(ctx context.Context, key string, o Order, reason string) (Charge, error) {
	res, err := c.client.Refund(ctx, &paymentv1.RefundRequest{IdempotencyKey: key, OrderId: o.ID, Reason: reason})
	return chargeFromProto(res.GetCharge(), err)
}

var chargeStatuses = map[paymentv1.ChargeStatus]ChargeStatus{
	paymentv1.ChargeStatus_CHARGE_STATUS_SUCCEEDED: ChargeSucceeded,
	paymentv1.ChargeStatus_CHARGE_STATUS_DECLINED:  ChargeDeclined,
	paymentv1.ChargeStatus_CHARGE_STATUS_REFUNDED:  ChargeRefunded,
	paymentv1.ChargeStatus_CHARGE_STATUS_VOIDED:    ChargeVoided,
}

func chargeFromProto(c *paymentv1.Charge, err error) (Charge, error) {
	if err != nil {
		return Charge{}, problem.FromGRPC(err)
	}
	status, ok := chargeStatuses[c.GetStatus()]
	if !ok {
		return Charge{}, fmt.Errorf("charge %s: unknown status %v", c.GetChargeId(), c.GetStatus())
	}
	return Charge{ID: c.GetChargeId(), Status: status, DeclineReason: c.GetDeclineReason()}, nil
}

// catalogPrices is Prices over the catalog gRPC API.
type catalogPrices struct{ client catalogv1.CatalogClient }

var _ Prices = catalogPrices{}

func newCatalogPrices(conn grpc.ClientConnInterface) catalogPrices {
	return catalogPrices{catalogv1.NewCatalogClient(conn)}
}

func (c catalogPrices) Prices(ctx context.Context, eventID string) (map[string]money.Money, error) {
	ev, err := c.client.GetEvent(ctx, &catalogv1.GetEventRequest{Id: eventID})
	if err != nil {
		return nil, problem.FromGRPC(err)
	}
	prices := map[string]money.Money{}
	for _, tc := range ev.GetTicketClasses() {
		prices[tc.GetId()] = money.Money{Currency: tc.GetPrice().GetCurrency(), Minor: tc.GetPrice().GetMinor()}
	}
	return prices, nil
}
