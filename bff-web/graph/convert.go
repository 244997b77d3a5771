package graph

import (
	"fmt"

	"boxoffice.dev/bff-web/graph/model"
	"boxoffice.dev/bffkit/protoconv"
	assistantv1 "boxoffice.dev/proto/boxoffice/assistant/v1"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	inventoryv1 "boxoffice.dev/proto/boxoffice/inventory/v1"
	notificationv1 "boxoffice.dev/proto/boxoffice/notification/v1"
	orderv1 "boxoffice.dev/proto/boxoffice/order/v1"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
)

// The conversions from the services' messages to the schema's types. They only copy: the
// services own every rule.

func money(m *commonv1.Money) *model.Money {
	if m == nil {
		return nil
	}
	return &model.Money{Currency: m.GetCurrency(), Minor: int(m.GetMinor())}
}

func eventFromProto(e *catalogv1.Event) *model.Event {
	out := &model.Event{
		ID: e.GetId(), Title: e.GetTitle(), Description: e.GetDescription(), Performers: e.GetPerformers(),
		StartsAt: e.GetStartsAt().AsTime(), OnSaleAt: e.GetOnSaleAt().AsTime(), FlashSale: e.GetFlashSale(),
		ImageURL: e.GetImageUrl(), City: e.GetCity(), Country: e.GetCountry(), Tags: e.GetTags(), VenueID: e.GetVenueId(),
	}
	for _, tc := range e.GetTicketClasses() {
		out.TicketClasses = append(out.TicketClasses, &model.TicketClass{
			ID: tc.GetId(), Name: tc.GetName(), Price: money(tc.GetPrice()), Seated: tc.GetSeated(), Capacity: int(tc.GetCapacity()),
		})
		if out.MinPrice == nil || int(tc.GetPrice().GetMinor()) < out.MinPrice.Minor {
			out.MinPrice = money(tc.GetPrice())
		}
	}
	return out
}

func hitFromProto(h *searchv1.Hit) *model.SearchHit {
	return &model.SearchHit{
		ID: h.GetId(), Title: h.GetTitle(), Performers: h.GetPerformers(), StartsAt: h.GetStartsAt().AsTime(),
		City: h.GetCity(), Country: h.GetCountry(), ImageURL: h.GetImageUrl(), MinPrice: money(h.GetMinPrice()),
		FlashSale: h.GetFlashSale(), Tags: h.GetTags(), Score: h.GetScore(), VenueID: h.GetVenueId(),
	}
}

func facets(values []*searchv1.FacetValue) []*model.FacetValue {
	out := make([]*model.FacetValue, 0, len(values))
	for _, v := range values {
		out = append(out, &model.FacetValue{Value: v.GetValue(), Count: int(v.GetCount())})
	}
	return out
}

func venueFromProto(v *catalogv1.Venue) *model.Venue {
	out := &model.Venue{ID: v.GetId(), Name: v.GetName(), City: v.GetCity(), Country: v.GetCountry(), Address: v.GetAddress(), Capacity: int(v.GetCapacity())}
	for _, s := range v.GetSections() {
		out.Sections = append(out.Sections, &model.VenueSection{Name: s.GetName(), Capacity: int(s.GetCapacity()), Seated: s.GetSeated()})
	}
	return out
}

func availabilityFromProto(a *inventoryv1.Availability) (*model.Availability, error) {
	level, err := protoconv.Enum[model.AvailabilityLevel](a.GetLevel(), "AVAILABILITY_LEVEL_")
	if err != nil {
		return nil, err
	}
	return &model.Availability{Level: level, Total: int(a.GetCounts().GetTotal()), Available: int(a.GetCounts().GetAvailable())}, nil
}

func counts(c *inventoryv1.Counts) *model.Counts {
	return &model.Counts{Total: int(c.GetTotal()), Available: int(c.GetAvailable()), Held: int(c.GetHeld()), Sold: int(c.GetSold())}
}

func seatMapFromProto(m *inventoryv1.SeatMap) (*model.SeatMap, error) {
	out := &model.SeatMap{Counts: counts(m.GetCounts()), Sections: []*model.SeatSection{}, GeneralAdmission: []*model.GeneralAdmission{}}
	for _, sec := range m.GetSections() {
		s := &model.SeatSection{ID: sec.GetId(), TicketClass: sec.GetClass()}
		for _, row := range sec.GetRows() {
			r := &model.SeatRow{Label: row.GetLabel()}
			for _, seat := range row.GetSeats() {
				st, err := protoconv.Enum[model.SeatStatus](seat.GetStatus(), "SEAT_STATUS_")
				if err != nil {
					return nil, fmt.Errorf("seat %s: %w", seat.GetId(), err)
				}
				r.Seats = append(r.Seats, &model.Seat{ID: seat.GetId(), Number: int(seat.GetNumber()), Status: st})
			}
			s.Rows = append(s.Rows, r)
		}
		out.Sections = append(out.Sections, s)
	}
	for _, ga := range m.GetGa() {
		out.GeneralAdmission = append(out.GeneralAdmission, &model.GeneralAdmission{TicketClass: ga.GetClass(), Counts: counts(ga.GetCounts())})
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
		ID: h.GetId(), Status: st, Seats: seats, TicketClass: protoconv.Optional(h.GetClass()), Quantity: int(h.GetQuantity()),
		CreatedAt: h.GetCreatedAt().AsTime(), ExpiresAt: h.GetExpiresAt().AsTime(), EventID: h.GetEventId(),
	}, nil
}

func orderFromProto(o *orderv1.OrderInfo) (*model.Order, error) {
	st, err := protoconv.Enum[model.OrderState](o.GetState(), "ORDER_STATE_")
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", o.GetId(), err)
	}
	out := &model.Order{
		ID: o.GetId(), State: st, HoldID: o.GetHoldId(), Amount: money(o.GetAmount()), FailureReason: protoconv.Optional(o.GetFailureReason()),
		CreatedAt: o.GetCreatedAt().AsTime(), UpdatedAt: o.GetUpdatedAt().AsTime(), EventID: o.GetEventId(), Lines: []*model.OrderLine{},
	}
	for _, l := range o.GetLines() {
		out.Lines = append(out.Lines, &model.OrderLine{TicketClass: l.GetClass(), Quantity: int(l.GetQuantity()), UnitPrice: money(l.GetUnitPrice())})
	}
	return out, nil
}

func notificationFromProto(m *notificationv1.Message) *model.Notification {
	return &model.Notification{ID: m.GetId(), Kind: m.GetKind(), Subject: m.GetSubject(), Body: m.GetBody(), CreatedAt: m.GetCreatedAt().AsTime()}
}

func answerFromProto(a *assistantv1.AskResponse) *model.Answer {
	out := &model.Answer{Text: a.GetAnswer(), Tokens: int(a.GetTokens()), Period: protoconv.Optional(a.GetUnderstood().GetPeriod()), Events: []*model.Suggestion{}}
	for _, s := range a.GetEvents() {
		out.Events = append(out.Events, &model.Suggestion{
			ID: s.GetId(), Title: s.GetTitle(), StartsAt: s.GetStartsAt().AsTime(), VenueName: s.GetVenueName(), City: s.GetCity(), MinPrice: money(s.GetMinPrice()),
		})
	}
	return out
}
