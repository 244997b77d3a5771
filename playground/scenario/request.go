package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"boxoffice.dev/playground/load"
)

// requestDriver sends one request per arrival (Scenario.Request) through the gateway, with
// the clients' retry behaviour, as the stream's identities in turn.
type requestDriver struct{}

var _ driver = requestDriver{}

func (requestDriver) setup(ctx context.Context, r *Run) error { return r.identities(ctx) }

func (requestDriver) job(r *Run, s *stream) func(ctx context.Context, c *load.Client, n int64) {
	spec := r.sc.Request
	if s.Request != nil {
		spec = *s.Request
	}
	url := r.target.Gateway + spec.Path
	// Each identity's body is made once: the arrivals only read them.
	bodies := make([][]byte, len(s.ids))
	if spec.Body != "" {
		for i, id := range s.ids {
			bodies[i] = fillBody(spec.Body, id.Name, r.demoPassword())
		}
	}
	return func(ctx context.Context, c *load.Client, n int64) {
		i := s.identity(n)
		id, body := s.ids[i], bodies[i]
		c.Do(ctx, func(ctx context.Context) (*http.Request, error) {
			var rd io.Reader
			if body != nil {
				rd = bytes.NewReader(body) // a new reader for every attempt: retries resend it whole
			}
			req, err := http.NewRequestWithContext(ctx, spec.Method, url, rd)
			if err == nil {
				id.Apply(req)
				if body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
			}
			return req, err
		})
	}
}

// fillBody replaces {email} and {password} in a JSON body template, escaped as JSON string
// contents: the template holds them inside quotes.
func fillBody(template, email, password string) []byte {
	esc := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	return []byte(strings.NewReplacer("{email}", esc(email), "{password}", esc(password)).Replace(template))
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
