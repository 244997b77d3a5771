package pace

import (
	"fmt"
	"net/http"
)

// Transport is an http.RoundTripper that paces the requests it sends: each waits on the
// Pacer before it goes to Base, and its answer feeds the Pacer back. Set it as an
// http.Client's Transport for every request to one server that shares the same limits.
// It must not be copied after first use.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Pacer holds the budgets; nil means the Transport's own.
	Pacer *Pacer

	own Pacer
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip waits for the budget (bounded by the request's context and the Pacer's
// MaxWait), then sends req. A request refused by the pacer is never sent; its error wraps
// ErrTooLong or the context's.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.Pacer
	if p == nil {
		p = &t.own
	}
	ticket, err := p.Wait(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, fmt.Errorf("pace %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		ticket.Done(0, nil)
		return nil, err
	}
	ticket.Done(resp.StatusCode, resp.Header)
	return resp, nil
}
