// Package identity carries who is calling, as verified by the gateway, to the services.
//
// The gateway authenticates every request (JWT or API key), strips any identity headers the
// client sent, and sets the ones below. Services trust them because they are reachable only
// through the gateway (or from other services and the playground; on Kubernetes the
// NetworkPolicies of deploy/k8s/base/network.yaml enforce it); they never parse tokens
// themselves. Over gRPC the same values travel as metadata with the same (lower-cased) names.
package identity

import (
	"context"
	"net/http"

	"google.golang.org/grpc/metadata"
)

// The headers the gateway sets after verification.
const (
	HeaderUser   = "X-Boxoffice-User"   // account id from the JWT subject
	HeaderTenant = "X-Boxoffice-Tenant" // partner tenant from the API key
	HeaderPlan   = "X-Boxoffice-Plan"   // free | partner | internal
	// HeaderQueryCost is, on a GraphQL request, what the gateway weighed the operation at and
	// what the caller's budget in points holds after it: a JSON object a BFF returns to the
	// client as extensions.cost.
	HeaderQueryCost = "X-Boxoffice-Query-Cost"
)

// Headers lists every header the gateway vouches for, for it to strip from client requests.
var Headers = []string{HeaderUser, HeaderTenant, HeaderPlan, HeaderQueryCost}

// Identity is a verified caller. The zero value is an anonymous caller.
type Identity struct {
	User   string
	Tenant string
	Plan   string
}

// Anonymous reports whether no user or tenant was verified.
func (id Identity) Anonymous() bool { return id.User == "" && id.Tenant == "" }

// FromRequest reads the identity the gateway set on r.
func FromRequest(r *http.Request) Identity {
	return Identity{User: r.Header.Get(HeaderUser), Tenant: r.Header.Get(HeaderTenant), Plan: r.Header.Get(HeaderPlan)}
}

// Set writes id onto h, replacing whatever was there (the gateway's last step before proxying).
func (id Identity) Set(h http.Header) {
	for name, v := range map[string]string{HeaderUser: id.User, HeaderTenant: id.Tenant, HeaderPlan: id.Plan} {
		h.Del(name)
		if v != "" {
			h.Set(name, v)
		}
	}
}

// OutgoingContext adds id to ctx's outgoing gRPC metadata, for a BFF or service calling another.
func OutgoingContext(ctx context.Context, id Identity) context.Context {
	pairs := []string{}
	for name, v := range map[string]string{HeaderUser: id.User, HeaderTenant: id.Tenant, HeaderPlan: id.Plan} {
		if v != "" {
			pairs = append(pairs, name, v)
		}
	}
	return metadata.AppendToOutgoingContext(ctx, pairs...)
}

// FromIncomingContext reads the identity from a gRPC server's incoming metadata.
func FromIncomingContext(ctx context.Context) Identity {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(name string) string {
		if v := md.Get(name); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	return Identity{User: first(HeaderUser), Tenant: first(HeaderTenant), Plan: first(HeaderPlan)}
}
