package limits

import (
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"boxoffice.dev/gateway/authn"
	"boxoffice.dev/gateway/policy"
)

// netDoc is a login route limited per account from one network, beside a ceiling per
// account, and a route counting by address and by network.
const netDoc = `
services: [{name: svc, instances: ["http://127.0.0.1:1"]}]
routes:
  - {id: login, match: {method: POST, path: /v1/auth/login}, service: svc, auth: none, limits: [login-per-account, login-per-account-ceiling]}
  - {id: api, match: {method: GET, path: /v1/api}, service: svc, auth: none, limits: [per-ip, per-net]}
limits:
  - {id: login-per-account, key: "json:email+net", rate: 10/1h, burst: 5, on_store_failure: closed}
  - {id: login-per-account-ceiling, key: "json:email", rate: 100/1h, burst: 50, on_store_failure: closed}
  - {id: per-ip, key: ip, rate: 100/s}
  - {id: per-net, key: net, rate: 100/s}
`

func TestBuildNetKey(t *testing.T) {
	p, err := policy.Parse([]byte(netDoc))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := policy.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	email := "json:email:" + hashed("ana@example.org")
	tests := []struct {
		name  string
		route string
		ip    string // "" for none
		want  []built
	}{
		{"IPv4: its /24", "api", "203.0.113.9", []built{{"per-ip", "ip:203.0.113.9"}, {"per-net", "net:203.0.113.0/24"}}},
		{"IPv4-mapped IPv6 is IPv4", "api", "::ffff:203.0.113.9", []built{{"per-ip", "ip:203.0.113.9"}, {"per-net", "net:203.0.113.0/24"}}},
		{"IPv6: its /64", "api", "2001:db8:1:2:3:4:5:6", []built{{"per-ip", "ip:2001:db8:1:2:3:4:5:6"}, {"per-net", "net:2001:db8:1:2::/64"}}},
		{"IPv6 with a zone: the zone is dropped", "api", "fe80::1:2%eth0", []built{{"per-ip", "ip:fe80::1:2"}, {"per-net", "net:fe80::/64"}}},
		{"no address: neither applies", "api", "", nil},
		{"login: the account from its network, and the account", "login", "198.51.100.77",
			[]built{{"login-per-account", "{" + email + "}:net:198.51.100.0/24"}, {"login-per-account-ceiling", email}}},
		{"login from the same /24: the same budgets", "login", "198.51.100.3",
			[]built{{"login-per-account", "{" + email + "}:net:198.51.100.0/24"}, {"login-per-account-ceiling", email}}},
		{"login from another /24: its own budget, the same ceiling", "login", "198.51.101.3",
			[]built{{"login-per-account", "{" + email + "}:net:198.51.101.0/24"}, {"login-per-account-ceiling", email}}},
		{"login without an address: the ceiling alone", "login", "", []built{{"login-per-account-ceiling", email}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ip netip.Addr
			if tt.ip != "" {
				ip = netip.MustParseAddr(tt.ip)
			}
			r := httptest.NewRequest("POST", "/", strings.NewReader(`{"email":"Ana@Example.org","password":"x"}`))
			built, err := Build(snap, Subject{Route: snap.Route(tt.route), Caller: authn.Caller{}, IP: ip, Request: r})
			reqs := built.Requests
			if err != nil {
				t.Fatalf("Build() = %v, want no error", err)
			}
			if got := summary(reqs); !slices.Equal(got, tt.want) {
				t.Errorf("Build() = %v, want %v", got, tt.want)
			}
		})
	}
}
