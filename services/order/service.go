package order

import (
	"context"
	"fmt"

	"boxoffice.dev/platform/money"
	"boxoffice.dev/platform/problem"
)

// Prices is what placing an order needs from the catalog: the price of each ticket class of
// an event.
type Prices interface {
	Prices(ctx context.Context, eventID string) (map[string]money.Money, error)
}

// Service is the order service's behaviour over its store: placing an order (its saga
// started), reading and listing a fan's orders. The transports (http.go, grpc.go) only
// translate to and from it, as auth's do to its Service. It is safe for concurrent use.
type Service struct {
	Store  *Store
	Holds  Holds
	Prices Prices
	Saga   *Saga
}

// Place creates the order req asks for and starts its saga; created is false when req
// replays an earlier request with the same idempotency key, which returns that request's
// order as it is now.
func (s *Service) Place(ctx context.Context, req CreateRequest) (o Order, created bool, err error) {
	if err := req.Validate(); err != nil {
		return Order{}, false, err
	}
	if o, found, err := s.Store.Replay(ctx, req); err != nil || found {
		return o, false, err
	}
	h, err := call(ctx, s.Saga.callTimeout(), func(ctx context.Context) (Hold, error) { return s.Holds.GetHold(ctx, req.HoldID) })
	switch problem.CodeOf(err) {
	case problem.NotFound, problem.Forbidden:
		return Order{}, false, ErrNoSuchHold
	}
	if err != nil {
		return Order{}, false, fmt.Errorf("read hold %s: %w", req.HoldID, err)
	}
	if err := h.CheckOrderable(req.Account, s.Store.Clock.Now().UTC()); err != nil {
		// A concurrent twin (same key) may have ordered the hold since the first look, and
		// its saga moved the hold on (sold, or released): answer as a retry, with its order.
		if o, found, rerr := s.Store.Replay(ctx, req); rerr == nil && found {
			return o, false, nil
		}
		return Order{}, false, err
	}
	prices, err := call(ctx, s.Saga.callTimeout(), func(ctx context.Context) (map[string]money.Money, error) { return s.Prices.Prices(ctx, h.EventID) })
	if err != nil {
		return Order{}, false, fmt.Errorf("read prices of event %s: %w", h.EventID, err)
	}
	lines, total, err := Price(h, prices)
	if err != nil {
		return Order{}, false, err
	}
	o, created, err = s.Store.Create(ctx, req, s.Store.NewOrder(req.Account, h, lines, total))
	if err != nil {
		return Order{}, false, err
	}
	if created {
		s.Saga.Start(o.ID)
	}
	return o, created, nil
}

// Get returns account's order id. Another fan's order is NotFound, as a missing one is:
// order ids reveal nothing about other fans.
func (s *Service) Get(ctx context.Context, account, id string) (Order, error) {
	if account == "" {
		return Order{}, problem.New(problem.Unauthorized, "reading orders needs a signed-in user")
	}
	o, err := s.Store.Get(ctx, id)
	if err != nil {
		return Order{}, err
	}
	if o.Account != account {
		return Order{}, problem.New(problem.NotFound, "no order %s", id)
	}
	return o, nil
}

// List returns account's order history, newest first.
func (s *Service) List(ctx context.Context, account string, limit int, cursor string) (Page, error) {
	if account == "" {
		return Page{}, problem.New(problem.Unauthorized, "reading orders needs a signed-in user")
	}
	return s.Store.List(ctx, account, limit, cursor)
}
