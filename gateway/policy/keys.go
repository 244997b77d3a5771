package policy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// KeyKind is one dimension a limit can count by.
type KeyKind string

// The key dimensions.
const (
	KeyUser   KeyKind = "user"   // the verified JWT subject
	KeyIP     KeyKind = "ip"     // the client IP (trusted proxies honoured)
	KeyNet    KeyKind = "net"    // the client's network: its /24 for IPv4, its /64 for IPv6
	KeyAPIKey KeyKind = "apikey" // the API key, hashed
	KeyTenant KeyKind = "tenant" // the tenant of the API key
	KeyRoute  KeyKind = "route"  // the route id
	KeyHeader KeyKind = "header" // header:<Name>, a request header's value, hashed
	KeyJSON   KeyKind = "json"   // json:<field>, a top-level string of the JSON body, hashed
	KeyPlan   KeyKind = "plan"   // the plan of the API key: one budget per plan
	KeyGlobal KeyKind = "global" // one budget for every request: a hierarchy's platform
)

// KeyPart is one dimension of a limit's key; Name is the header or JSON field.
type KeyPart struct {
	Kind KeyKind
	Name string
}

// ParseKey reads a key such as "user", "ip+route", "json:email" or "json:email+net".
func ParseKey(s string) ([]KeyPart, error) {
	if s == "" {
		return nil, fmt.Errorf("empty key: want user, ip, net, apikey, tenant, plan, global, route, header:<Name>, json:<field> or several joined by +")
	}
	var parts []KeyPart
	for _, p := range strings.Split(s, "+") {
		kind, arg, hasArg := strings.Cut(p, ":")
		k := KeyPart{Kind: KeyKind(kind), Name: arg}
		switch k.Kind {
		case KeyUser, KeyIP, KeyNet, KeyAPIKey, KeyTenant, KeyPlan, KeyGlobal, KeyRoute:
			if hasArg {
				return nil, fmt.Errorf("%q: %s takes no argument", s, kind)
			}
		case KeyHeader:
			if !validHeaderName(arg) {
				return nil, fmt.Errorf("%q: want header:<Name>", s)
			}
			k.Name = http.CanonicalHeaderKey(arg)
		case KeyJSON:
			if arg == "" || strings.ContainsAny(arg, ".[]{}:+ ") {
				return nil, fmt.Errorf("%q: want json:<top-level field>", s)
			}
		default:
			return nil, fmt.Errorf("%q: unknown dimension %q", s, kind)
		}
		for _, q := range parts {
			if q == k {
				return nil, fmt.Errorf("%q: %s named twice", s, p)
			}
		}
		parts = append(parts, k)
	}
	// An address lies in one network: the pair counts exactly what ip alone does.
	if slices.Contains(parts, KeyPart{Kind: KeyIP}) && slices.Contains(parts, KeyPart{Kind: KeyNet}) {
		return nil, fmt.Errorf("%q: ip and net together count what ip alone does: keep one", s)
	}
	return parts, nil
}
