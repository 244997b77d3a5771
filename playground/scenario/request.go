package scenario

import (
	"context"
	"net/http"

	"boxoffice.dev/playground/load"
)

// requestDriver sends one request per arrival (Scenario.Request) through the gateway, with
// the clients' retry behaviour, as the stream's identities in turn.
type requestDriver struct{}

var _ driver = requestDriver{}

func (requestDriver) setup(ctx context.Context, r *Run) error { return r.identities(ctx) }

func (requestDriver) job(r *Run, s *stream) func(ctx context.Context, c *load.Client, n int64) {
	url := r.target.Gateway + r.sc.Request.Path
	method := r.sc.Request.Method
	return func(ctx context.Context, c *load.Client, n int64) {
		id := s.ids[int(n%int64(len(s.ids)))]
		c.Do(ctx, func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, method, url, nil)
			if err == nil {
				id.Apply(req)
			}
			return req, err
		})
	}
}

func (requestDriver) poll(context.Context, *Run) map[string]float64 { return nil }

func (requestDriver) finish(context.Context, *Run) {}
