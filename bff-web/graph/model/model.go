// Package model holds bff-web's GraphQL types: the hand-written ones below, which carry the
// keys their fields' resolvers load by, and models_gen.go, which gqlgen generates from the
// schema for the rest.
package model

import "time"

// Event is the full event page. VenueID is not in the schema: the venue resolver loads by it.
type Event struct {
	ID            string
	Title         string
	Description   string
	Performers    []string
	StartsAt      time.Time
	OnSaleAt      time.Time
	FlashSale     bool
	ImageURL      string
	City          string
	Country       string
	Tags          []string
	TicketClasses []*TicketClass
	MinPrice      *Money
	VenueID       string
}

// SearchHit is an event card from the search index; VenueID keys its venue.
type SearchHit struct {
	ID         string
	Title      string
	Performers []string
	StartsAt   time.Time
	City       string
	Country    string
	ImageURL   string
	MinPrice   *Money
	FlashSale  bool
	Tags       []string
	Score      float64
	VenueID    string
}

// Order is one of the fan's orders; EventID keys its event.
type Order struct {
	ID            string
	State         OrderState
	HoldID        string
	Lines         []*OrderLine
	Amount        *Money
	FailureReason *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	EventID       string
}

// Hold is one of the fan's holds; EventID keys its event.
type Hold struct {
	ID          string
	Status      HoldStatus
	Seats       []string
	TicketClass *string
	Quantity    int
	CreatedAt   time.Time
	ExpiresAt   time.Time
	EventID     string
}

// Me is the signed-in fan; its lists are resolvers of their own.
type Me struct {
	Account string
}
