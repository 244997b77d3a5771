package graph

import (
	"fmt"

	"boxoffice.dev/bff-mobile/graph/model"
	"boxoffice.dev/bffkit/protoconv"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	waitroomv1 "boxoffice.dev/proto/boxoffice/waitroom/v1"
)

// The conversions from the services' messages to the schema's types: copies, cut down to
// what a phone shows.

func money(m *commonv1.Money) *model.Money {
	if m == nil {
		return nil
	}
	return &model.Money{Currency: m.GetCurrency(), Minor: int(m.GetMinor())}
}

// lowestPrice is the cheapest ticket class's price; nil for an event without classes.
func lowestPrice(e *catalogv1.Event) *model.Money {
	var low *commonv1.Money
	for _, tc := range e.GetTicketClasses() {
		if low == nil || tc.GetPrice().GetMinor() < low.GetMinor() {
			low = tc.GetPrice()
		}
	}
	return money(low)
}

func cardFromProto(e *catalogv1.Event) *model.Card {
	return &model.Card{
		ID: e.GetId(), Title: e.GetTitle(), StartsAt: e.GetStartsAt().AsTime(), City: e.GetCity(),
		LowestPrice: lowestPrice(e), FlashSale: e.GetFlashSale(), VenueID: e.GetVenueId(), Image: e.GetImageUrl(),
	}
}

func screenFromProto(e *catalogv1.Event) *model.EventScreen {
	out := &model.EventScreen{
		ID: e.GetId(), Title: e.GetTitle(), Summary: summary(e.GetDescription(), summaryLength), StartsAt: e.GetStartsAt().AsTime(),
		City: e.GetCity(), LowestPrice: lowestPrice(e), FlashSale: e.GetFlashSale(), VenueID: e.GetVenueId(), Image: e.GetImageUrl(),
		TicketClasses: []*model.TicketClass{},
	}
	for _, tc := range e.GetTicketClasses() {
		out.TicketClasses = append(out.TicketClasses, &model.TicketClass{ID: tc.GetId(), Name: tc.GetName(), Price: money(tc.GetPrice()), Seated: tc.GetSeated()})
	}
	return out
}

func queueFromProto(q *waitroomv1.QueueStatus) (*model.QueueStatus, error) {
	st, err := protoconv.Enum[model.QueueState](q.GetState(), "QUEUE_STATE_")
	if err != nil {
		return nil, err
	}
	out := &model.QueueStatus{State: st, Position: int(q.GetPosition()), Pass: protoconv.Optional(q.GetPass())}
	if q.GetEstimatedWaitS() >= 0 {
		wait := int(q.GetEstimatedWaitS())
		out.EstimatedWaitSeconds = &wait
	}
	if q.GetPassExpiresAt() != nil {
		at := q.GetPassExpiresAt().AsTime()
		out.PassExpiresAt = &at
	}
	return out, nil
}

func holdFromProto(h *inventoryv1.Hold) (*model.Hold, error) {
	st, err := protoconv.Enum[model.HoldStatus](h.GetStatus(), "HOLD_STATUS_")
	if err != nil {
		return nil, fmt.Errorf("hold %s: %w", h.GetId(), err)
	}
	seats := h.GetSeats()
	if seats == nil {
		seats = []string{}
	}
	return &model.Hold{
		ID: h.GetId(), Status: st, EventID: h.GetEventId(), Seats: seats, TicketClass: protoconv.Optional(h.GetClass()),
		Quantity: int(h.GetQuantity()), ExpiresAt: h.GetExpiresAt().AsTime(),
	}, nil
}

func orderFromProto(o *orderv1.OrderInfo) (*model.Order, error) {
	st, err := protoconv.Enum[model.OrderState](o.GetState(), "ORDER_STATE_")
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", o.GetId(), err)
	}
	return &model.Order{ID: o.GetId(), State: st, Amount: money(o.GetAmount()), EventID: o.GetEventId(), CreatedAt: o.GetCreatedAt().AsTime()}, nil
}
