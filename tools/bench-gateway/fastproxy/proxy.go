package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"boxoffice.dev/gateway/ratelimit"
	"boxoffice.dev/gateway/upstream"
)

// MetricsPath serves the proxy's counters in the Prometheus text format, the limiter's
// decisions by path under the gateway's name for them (ratelimit_decisions_total), which
// the bench reads for both.
const MetricsPath = "/_fastproxy/metrics"

// proxy forwards every request to one upstream, after the policy work when there is any.
// It is safe for concurrent use.
type proxy struct {
	client   *fasthttp.HostClient
	upHost   string      // the upstream's host:port, the Host of forwarded requests
	instance string      // the upstream's base URL, as X-Boxoffice-Upstream names it
	policy   *policyWork // nil with -plain

	// Counters, for the bench's report and for tests.
	outcomes [numOutcomes]atomic.Int64
	paths    sync.Map // ratelimit.Path → *atomic.Int64
}

// outcome is what became of a request.
type outcome int

const (
	forwarded outcome = iota
	noRoute
	unauthorized
	rateLimited
	limitStoreError
	upstreamError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"forwarded", "no_route", "unauthorized", "rate_limited", "limit_store_error", "upstream_error"}

// newProxy builds the proxy cfg describes; its policy work runs until ctx is done.
func newProxy(ctx context.Context, cfg Config) (*proxy, error) {
	u, _ := url.Parse(cfg.Upstream) // validated
	p := &proxy{
		upHost: u.Host, instance: cfg.Upstream,
		client: &fasthttp.HostClient{
			Addr: u.Host,
			// Up to 256 connections to the upstream, kept idle between requests, as the bench
			// configures nginx and Caddy.
			MaxConns:                      256,
			MaxIdleConnDuration:           90 * time.Second,
			NoDefaultUserAgentHeader:      true,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
		},
	}
	if !cfg.Plain {
		w, err := newPolicyWork(ctx, cfg)
		if err != nil {
			return nil, err
		}
		p.policy = w
	}
	return p, nil
}

func (p *proxy) close() {
	p.client.CloseIdleConnections()
	if p.policy != nil {
		p.policy.close()
	}
}

// hopByHop are the headers a proxy does not forward (RFC 9110 §7.6.1), as
// httputil.ReverseProxy removes them.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// serve is the fasthttp handler: the counters on MetricsPath, every other request decided
// (unless -plain) and forwarded.
func (p *proxy) serve(rc *fasthttp.RequestCtx) {
	if string(rc.Path()) == MetricsPath {
		p.writeMetrics(rc)
		return
	}
	var allowed *decision
	if p.policy != nil {
		d, out := p.policy.decide(rc)
		if out != forwarded {
			p.outcomes[out].Add(1)
			return
		}
		for _, r := range d.res.Rules {
			p.countPath(r.Path)
		}
		allowed = &d
	}
	// The request as the gateway's reverse proxy sends it: hop-by-hop headers dropped, the
	// upstream's Host, X-Forwarded-* naming the client.
	req, h := &rc.Request, &rc.Request.Header
	for _, name := range hopByHop {
		h.Del(name)
	}
	var ipBuf [39]byte
	h.Set("X-Forwarded-Host", string(h.Host()))
	h.SetBytesV("X-Forwarded-For", peerIP(rc).AppendTo(ipBuf[:0]))
	h.Set("X-Forwarded-Proto", "http")
	req.SetHost(p.upHost)
	if allowed != nil {
		setTrace(h, &rc.Response.Header)
	}
	resp := &rc.Response
	if err := p.client.DoTimeout(req, resp, 30*time.Second); err != nil {
		p.outcomes[upstreamError].Add(1)
		resp.Reset()
		rc.Error("upstream: "+err.Error(), fasthttp.StatusBadGateway)
		return
	}
	for _, name := range hopByHop {
		resp.Header.Del(name)
	}
	resp.Header.Set(upstream.HeaderUpstream, p.instance)
	if allowed != nil {
		p.policy.setLimitHeaders(&resp.Header, *allowed)
	}
	p.outcomes[forwarded].Add(1)
}

// peerIP is the connection's peer address, an IPv4-mapped one unmapped. There are no
// trusted proxies, as in the bench's gateway: the client is the peer.
func peerIP(rc *fasthttp.RequestCtx) netip.Addr {
	a, _ := netip.AddrFromSlice(rc.RemoteIP())
	return a.Unmap()
}

// setTrace gives the request fresh trace ids, as the gateway does for a request without
// trace context: X-Request-Id on the request and the response, a traceparent upstream.
func setTrace(req *fasthttp.RequestHeader, resp *fasthttp.ResponseHeader) {
	var ids [24]byte
	_, _ = rand.Read(ids[:])
	var buf [55]byte // "00-", 32 hex digits, "-", 16 hex digits, "-01"
	b := append(buf[:0], "00-"...)
	b = hex.AppendEncode(b, ids[:16])
	b = append(b, '-')
	b = hex.AppendEncode(b, ids[16:])
	b = append(b, "-01"...)
	id := b[3:35] // the trace id
	req.SetBytesV("X-Request-Id", id)
	resp.SetBytesV("X-Request-Id", id)
	req.SetBytesV("Traceparent", b)
}

func (p *proxy) countPath(path ratelimit.Path) {
	n, ok := p.paths.Load(path)
	if !ok {
		n, _ = p.paths.LoadOrStore(path, new(atomic.Int64))
	}
	n.(*atomic.Int64).Add(1)
}

// writeMetrics answers the counters in the Prometheus text format.
func (p *proxy) writeMetrics(rc *fasthttp.RequestCtx) {
	rc.SetContentType("text/plain; version=0.0.4")
	var b []byte
	p.paths.Range(func(k, v any) bool {
		b = append(b, `ratelimit_decisions_total{path="`...)
		b = append(b, k.(ratelimit.Path)...)
		b = append(b, `"} `...)
		b = strconv.AppendInt(b, v.(*atomic.Int64).Load(), 10)
		b = append(b, '\n')
		return true
	})
	for i, name := range outcomeNames {
		b = append(b, `fastproxy_requests_total{outcome="`...)
		b = append(b, name...)
		b = append(b, `"} `...)
		b = strconv.AppendInt(b, p.outcomes[i].Load(), 10)
		b = append(b, '\n')
	}
	rc.SetBody(b)
}
