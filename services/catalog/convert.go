package catalog

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
)

// The wire forms of the domain types, shared by the gRPC server and the change events so a
// consumer decodes both with the same generated types.

func eventProto(e Event) *catalogv1.Event {
	classes := make([]*catalogv1.TicketClass, len(e.TicketClasses))
	for i, c := range e.TicketClasses {
		classes[i] = &catalogv1.TicketClass{
			Id: c.ID, Name: c.Name, Seated: c.Seated, Capacity: int32(c.Capacity),
			Price: &commonv1.Money{Currency: c.Price.Currency, Minor: c.Price.Minor},
		}
	}
	return &catalogv1.Event{
		Id: e.ID, Title: e.Title, Description: e.Description, Performers: e.Performers,
		VenueId: e.VenueID, StartsAt: timestamppb.New(e.StartsAt), OnSaleAt: timestamppb.New(e.OnSaleAt),
		FlashSale: e.FlashSale, ImageUrl: e.ImageURL, TicketClasses: classes,
		City: e.City, Country: e.Country, Tags: e.Tags,
		Version: e.Version, UpdatedAt: timestamppb.New(e.UpdatedAt),
	}
}

func venueProto(v Venue) *catalogv1.Venue {
	sections := make([]*catalogv1.Section, len(v.Sections))
	for i, s := range v.Sections {
		sections[i] = &catalogv1.Section{Name: s.Name, Capacity: int32(s.Capacity), Seated: s.Seated}
	}
	return &catalogv1.Venue{
		Id: v.ID, Name: v.Name, City: v.City, Country: v.Country, Address: v.Address,
		Capacity: int32(v.Capacity), Sections: sections,
	}
}

// filterFrom reads a gRPC filter; nil filters nothing.
func filterFrom(f *catalogv1.EventFilter) Filter {
	if f == nil {
		return Filter{}
	}
	out := Filter{City: f.GetCity(), Query: f.GetQuery(), Performer: f.GetPerformer(), MaxPrice: f.GetMaxPriceMinor(), Tag: f.GetTag()}
	if f.From != nil {
		out.From = f.GetFrom().AsTime()
	}
	if f.To != nil {
		out.To = f.GetTo().AsTime()
	}
	return out
}

func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
