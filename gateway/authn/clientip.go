package authn

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP finds the address of the client a request comes from.
//
// It is the connection's peer unless that peer is a trusted proxy (the edge nginx, a load
// balancer), in which case X-Forwarded-For is read from the right, skipping trusted hops,
// and the first untrusted address is the client. Addresses further left were written by the
// client itself and prove nothing: trusting the leftmost one would let anyone pick the IP
// their per-IP limit counts. With no trusted proxies the header is ignored entirely.
//
// The zero value trusts nobody. Read-only after construction, so safe for concurrent use.
type ClientIP struct {
	Trusted []netip.Prefix
}

// ParseTrusted reads TRUSTED_PROXIES: CIDRs or single addresses.
func ParseTrusted(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want a CIDR such as 10.0.0.0/8 or an address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// Of returns r's client address; the zero Addr if even the peer address is unreadable.
func (c ClientIP) Of(r *http.Request) netip.Addr {
	peer := parseHostPort(r.RemoteAddr)
	if !c.trusted(peer) {
		return peer
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return client // a trusted hop wrote garbage, or the client did: stop here
			}
			client = a.Unmap()
			if !c.trusted(client) {
				return client
			}
		}
	}
	return client
}

func (c ClientIP) trusted(a netip.Addr) bool {
	for _, p := range c.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func parseHostPort(s string) netip.Addr {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}
