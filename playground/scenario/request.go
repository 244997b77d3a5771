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

// The gauges the request driver reads from the gateway, every second, when a scenario lists
// them among its counters: the backend service's concurrency limit in force (fixed, or where
// an adaptive one stands) and its requests in flight at the gateway.
const (
	counterGatewayLimit    = "gateway_concurrency_limit"
	counterGatewayInFlight = "gateway_in_flight"
)

func (requestDriver) poll(ctx context.Context, r *Run) map[string]float64 {
	svc := r.sc.Backend.Service
	if svc == "" || !r.sc.hasCounter(counterGatewayLimit, counterGatewayInFlight) {
		return nil
	}
	var up struct {
		Services []struct {
			Name             string `json:"name"`
			ConcurrencyLimit int    `json:"concurrencyLimit"`
			InFlight         int64  `json:"inFlight"`
		} `json:"services"`
	}
	if err := r.sys.admin(ctx, http.MethodGet, "/admin/upstreams", nil, &up); err != nil {
		return nil // a second without the gauges: the chart shows a gap, not a made-up value
	}
	for _, s := range up.Services {
		if s.Name != svc {
			continue
		}
		out := map[string]float64{}
		if r.sc.hasCounter(counterGatewayLimit) {
			out[counterGatewayLimit] = float64(s.ConcurrencyLimit)
		}
		if r.sc.hasCounter(counterGatewayInFlight) {
			out[counterGatewayInFlight] = float64(s.InFlight)
		}
		return out
	}
	return nil
}

func (requestDriver) finish(context.Context, *Run) {}
