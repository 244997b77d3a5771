package policy_test

import (
	"errors"
	"fmt"
	"testing"

	"boxoffice.dev/gateway/policy"
	"boxoffice.dev/gateway/upstream"
)

// The policy's validation and the upstream layer must agree on a service's instances and DNS
// name: one the policy accepts but the pools refuse fails an admin edit with 500, and a reload
// with the pools' error instead of the field at fault.
func TestServiceAddressesAgreeWithUpstream(t *testing.T) {
	tests := []struct {
		name     string
		instance string // or
		dns      string
		ok       bool
	}{
		{"http base URL", "http://127.0.0.1:8102", "", true},
		{"https base URL", "https://inventory.internal:8443", "", true},
		{"trailing slash", "http://127.0.0.1:8102/", "", true},
		{"IPv6", "http://[::1]:8102", "", true},
		{"host:port means http", "127.0.0.1:8102", "", true},
		{"no port", "http://127.0.0.1", "", false},
		{"empty port", "http://127.0.0.1:", "", false},
		{"port 0", "http://127.0.0.1:0", "", false},
		{"port above 65535", "http://127.0.0.1:65536", "", false},
		{"named port", "http://127.0.0.1:http", "", false},
		{"no host", "http://:8102", "", false},
		{"query", "http://127.0.0.1:1?x=1", "", false},
		{"empty query", "http://127.0.0.1:1?", "", false},
		{"fragment", "http://127.0.0.1:1#top", "", false},
		{"user information", "http://user:pw@127.0.0.1:1", "", false},
		{"path", "http://127.0.0.1:1/api", "", false},
		{"other scheme", "ftp://127.0.0.1:21", "", false},
		{"not a URL", "http://127.0.0.1:1 2", "", false},
		{"dns host:port", "", "inventory:8104", true},
		{"dns with http", "", "http://inventory:8104", true},
		{"dns with https", "", "https://inventory:8443", true},
		{"dns named port", "", "localhost:http", false},
		{"dns without port", "", "inventory", false},
		{"dns port 0", "", "inventory:0", false},
		{"dns port above 65535", "", "inventory:70000", false},
		{"dns with a path", "", "http://inventory:8104/v1", false},
		{"dns other scheme", "", "grpc://inventory:8104", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sv := policy.Service{Name: "svc", DNS: tt.dns}
			field := "services[svc].dns"
			if tt.instance != "" {
				sv.Instances = []string{tt.instance}
				field = "services[svc].instances[0]"
			}
			in := fmt.Sprintf("instances %q dns %q", sv.Instances, sv.DNS)

			_, err := policy.Compile(servicePolicy(sv), nil)
			fe, isField := errors.AsType[*policy.FieldError](err)
			switch {
			case tt.ok && err != nil:
				t.Errorf("Compile(%s) = %v, want nil", in, err)
			case !tt.ok && (!isField || fe.Field != field):
				t.Errorf("Compile(%s) = %v, want an error naming %s", in, err, field)
			}

			_, err = upstream.New([]upstream.ServiceConfig{{Name: sv.Name, Instances: sv.Instances, DNS: sv.DNS}}, upstream.Options{})
			if got := err == nil; got != tt.ok {
				t.Errorf("upstream.New(%s) = %v, want accepted %v", in, err, tt.ok)
			}
		})
	}
}

func TestServiceWithoutAddressesIsRefused(t *testing.T) {
	sv := policy.Service{Name: "svc"}
	_, err := policy.Compile(servicePolicy(sv), nil)
	if fe, ok := errors.AsType[*policy.FieldError](err); !ok || fe.Field != "services[svc].instances" {
		t.Errorf("Compile(service without instances or dns) = %v, want an error naming services[svc].instances", err)
	}
	if _, err := upstream.New([]upstream.ServiceConfig{{Name: sv.Name}}, upstream.Options{}); err == nil {
		t.Errorf("upstream.New(service without instances or dns) = nil, want an error, as the policy refuses it")
	}
}

// servicePolicy is the smallest valid policy around sv: one route to it.
func servicePolicy(sv policy.Service) *policy.Policy {
	return &policy.Policy{
		Services: []policy.Service{sv},
		Routes:   []policy.Route{{ID: "r", Match: policy.Match{Path: "/r"}, Service: sv.Name, Auth: policy.AuthNone}},
	}
}
