// Package model holds bff-mobile's GraphQL types: the hand-written ones below, which carry
// the keys and raw values their fields' resolvers work from, and models_gen.go, which gqlgen
// generates from the schema for the rest.
package model

import "time"

// Card is an event in the feed. VenueID keys its venue's name; Image is the full-size image
// the imageUrl resolver scales.
type Card struct {
	ID          string
	Title       string
	StartsAt    time.Time
	City        string
	LowestPrice *Money
	FlashSale   bool
	VenueID     string
	Image       string
}

// EventScreen is the event screen; VenueID and Image as for Card.
type EventScreen struct {
	ID            string
	Title         string
	Summary       string
	StartsAt      time.Time
	City          string
	LowestPrice   *Money
	FlashSale     bool
	TicketClasses []*TicketClass
	VenueID       string
	Image         string
}

// Hold is one of the fan's holds; its eventTitle is loaded by EventID.
type Hold struct {
	ID          string
	Status      HoldStatus
	EventID     string
	Seats       []string
	TicketClass *string
	Quantity    int
	ExpiresAt   time.Time
}

// Order is one of the fan's orders; its eventTitle is loaded by EventID.
type Order struct {
	ID        string
	State     OrderState
	Amount    *Money
	EventID   string
	CreatedAt time.Time
}
