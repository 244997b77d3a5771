package authn

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// ClientIP finds the address of the client a request comes from: the connection's peer,
// unless that is a trusted proxy; then X-Forwarded-For (all its lines, as one list) is read
// from the right, skipping trusted hops, since addresses further left prove nothing. A hop
// may carry a port or brackets; empty ones are skipped, zones dropped, IPv4-mapped addresses
// read as IPv4. A hop that is no address ("unknown") ends the walk with Unknown. The zero
// value trusts nobody; read-only after construction, so safe for concurrent use. See
// docs/lessons/gateway.md, "What it does, step by step".
type ClientIP struct {
	Trusted []netip.Prefix
}

// Unknown is the client address of a request whose trusted proxies could not name its
// client: the unspecified address, which no connection comes from. Such clients share one
// per-IP bucket of their own. The alternatives are worse: the proxy's address would put
// them in the bucket of every client of that proxy, and no address at all would exempt
// them from per-IP limits.
var Unknown = netip.IPv4Unspecified()

// ParseTrusted reads TRUSTED_PROXIES: CIDRs or single addresses. An IPv4-mapped prefix
// (::ffff:10.0.0.0/104) is the IPv4 one (10.0.0.0/8).
func ParseTrusted(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, unmapPrefix(p).Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want a CIDR such as 10.0.0.0/8 or an address", s)
		}
		a = a.Unmap().WithZone("")
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Of returns r's client address; the zero Addr if even the peer address is unreadable.
func (c ClientIP) Of(r *http.Request) netip.Addr {
	client, _ := c.Resolve(r)
	return client
}

// Resolve returns r's client address, as Of does, and the part of r's X-Forwarded-For the
// trusted proxies vouch for: from the client's hop to the last one, each as a canonical
// address (an unreadable hop as it was sent). The chain is nil when the peer is not trusted
// or sent no X-Forwarded-For: then the peer is all there is.
func (c ClientIP) Resolve(r *http.Request) (netip.Addr, []string) {
	peer := parseHostPort(r.RemoteAddr)
	if !c.trusted(peer) {
		return peer, nil
	}
	client := peer
	var chain []string // right to left
	lines := r.Header.Values("X-Forwarded-For")
walk:
	for i := len(lines) - 1; i >= 0; i-- {
		for rest := lines[i]; rest != ""; {
			var hop string
			if k := strings.LastIndexByte(rest, ','); k >= 0 {
				rest, hop = rest[:k], rest[k+1:]
			} else {
				rest, hop = "", rest
			}
			hop = strings.TrimSpace(hop)
			if hop == "" {
				continue // an empty list element, which HTTP says to ignore
			}
			a, ok := parseHop(hop)
			if !ok {
				client, chain = Unknown, append(chain, hop)
				break walk
			}
			client, chain = a, append(chain, a.String())
			if !c.trusted(a) {
				break walk
			}
		}
	}
	slices.Reverse(chain)
	return client, chain // every hop trusted: the leftmost is the client
}

// FromTrustedHop reports whether r's peer, the hop that connected to the gateway, is one of
// the trusted proxies: what it says of the request (X-Forwarded-For, its trace context) is
// believed.
func (c ClientIP) FromTrustedHop(r *http.Request) bool {
	return c.trusted(parseHostPort(r.RemoteAddr))
}

func (c ClientIP) trusted(a netip.Addr) bool {
	for _, p := range c.Trusted {
		if unmapPrefix(p).Contains(a) {
			return true
		}
	}
	return false
}

// unmapPrefix turns an IPv4-mapped IPv6 prefix of /96 or longer into the IPv4 prefix it
// stands for, since addresses are compared unmapped. Shorter IPv6 prefixes stay IPv6.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// parseHop reads one X-Forwarded-For element: an address, maybe bracketed, maybe with a port.
func parseHop(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		if ap, perr := netip.ParseAddrPort(s); perr == nil {
			a, err = ap.Addr(), nil
		} else if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
			a, err = netip.ParseAddr(s[1 : len(s)-1])
		}
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

func parseHostPort(s string) netip.Addr {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap().WithZone("")
}
