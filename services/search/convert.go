package search

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	"boxoffice.dev/platform/money"
	catalogv1 "boxoffice.dev/proto/boxoffice/catalog/v1"
	commonv1 "boxoffice.dev/proto/boxoffice/common/v1"
	searchv1 "boxoffice.dev/proto/boxoffice/search/v1"
)

// DocFrom reads a catalog event into a document; its MinPrice is the cheapest ticket class.
func DocFrom(e *catalogv1.Event) Doc {
	d := Doc{
		ID: e.GetId(), Title: e.GetTitle(), Description: e.GetDescription(), Performers: e.GetPerformers(),
		VenueID: e.GetVenueId(), City: e.GetCity(), Country: e.GetCountry(), StartsAt: e.GetStartsAt().AsTime(),
		ImageURL: e.GetImageUrl(), FlashSale: e.GetFlashSale(), Tags: e.GetTags(), Version: e.GetVersion(),
	}
	for i, c := range e.GetTicketClasses() {
		if p := c.GetPrice(); i == 0 || p.GetMinor() < d.MinPrice.Minor {
			d.MinPrice = money.Money{Currency: p.GetCurrency(), Minor: p.GetMinor()}
		}
	}
	return d
}

func resultProto(r Result) *searchv1.SearchResponse {
	hits := make([]*searchv1.Hit, len(r.Hits))
	for i, h := range r.Hits {
		hits[i] = &searchv1.Hit{
			Id: h.ID, Title: h.Title, Performers: h.Performers, VenueId: h.VenueID, City: h.City, Country: h.Country,
			StartsAt: timestamppb.New(h.StartsAt), MinPrice: &commonv1.Money{Currency: h.MinPrice.Currency, Minor: h.MinPrice.Minor},
			ImageUrl: h.ImageURL, FlashSale: h.FlashSale, Tags: h.Tags, Score: h.Score,
		}
	}
	return &searchv1.SearchResponse{
		Hits: hits, Total: int32(r.Total),
		Facets: &searchv1.Facets{City: facetProto(r.Facets.City), Month: facetProto(r.Facets.Month), Price: facetProto(r.Facets.Price)},
	}
}

func facetProto(values []FacetValue) []*searchv1.FacetValue {
	out := make([]*searchv1.FacetValue, len(values))
	for i, v := range values {
		out[i] = &searchv1.FacetValue{Value: v.Value, Count: int32(v.Count)}
	}
	return out
}
