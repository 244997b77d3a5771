package scenario

import (
	"context"
	"errors"
	"net/http"

	"boxoffice.dev/playground/load"
)

// flashSale is a fan's journey through an on-sale: join the waiting room, wait for the pass,
// hold seats, order them.
type flashSale struct{}

func (*flashSale) setup(ctx context.Context, r *Run) error {
	return errors.New("the flash-sale driver is not implemented yet")
}

func (*flashSale) job(r *Run, s *stream) func(ctx context.Context, c *load.Client, n int64) {
	return func(ctx context.Context, c *load.Client, n int64) {}
}

func (*flashSale) poll(context.Context, *Run) map[string]float64 { return nil }

func (*flashSale) finish(context.Context, *Run) {}

func (*flashSale) setAdmitRate(ctx context.Context, r *Run) error { return nil }

var _ = http.MethodGet
